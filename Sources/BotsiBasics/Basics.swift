/// Small helpers every target may import (random numbers, text distance, durations, escaping):
/// one copy each, so they cannot drift apart between targets.
public enum Basics {}
