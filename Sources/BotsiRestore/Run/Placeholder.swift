// Placeholder until the runner lands.
