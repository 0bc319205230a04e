"""The roofline: this machine's ceilings, a model's FLOPs and bytes per phase, and where a reply lands against them."""
