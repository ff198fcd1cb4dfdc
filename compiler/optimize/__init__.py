"""Export of optimized models: the options of simulator/ written into real model files."""
