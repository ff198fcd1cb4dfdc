"""Model loading, compilation and measurement. What the worker calls:

    frontends.detect(path, override=None) -> str            # format name, or ModelFormatError
    frontends.load(path, format=None) -> Graph              # source graph, or ModelFormatError
    backends.ort.compile(src_path, out_path, source, opt_level="all") -> Graph   # tasks + source_nodes
    backends.ort.profile(compiled_path, ProfileSettings(...)) -> Profile        # measured, sandboxed
    inputs.parse_shape_args(["x=1x3x224x224"]) / inputs.parse_value_args(["sr=16000"])

User-facing errors (messages shown as is): graph.ModelFormatError, errors.ModelRunError,
errors.InputSpecError, errors.SandboxError.
"""
