"""Local or remote: the choice of backend for what a spec names, above both (the engine, the lab, the race and the CLI use it)."""
