"""The names the compiler and the simulator both speak, below both: tensor and kernel formats (`formats`),
optimization options (`options`: combos, presets, what each does per backend) and targets (`targets`: backend +
device profile, and which exporter writes files for it). Pure data and parsing; imports nothing else of the project.
"""
