// Placeholder until tests land.
