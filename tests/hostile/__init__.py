"""The hostile corpus: seeded malformed and adversarial inputs for every tool."""
