"""What the tests and the benchmarks share, so neither imports the other: models written in code (`modelzoo`,
`controlflow_models`, `tflite_builder`, `coreml_builder`, `pt2src/`), graphs built directly (`graphs`), small
option tables (`solver_tables`), a live `edgescope serve` (`live`) and the UI's stand-in server (`mock_server`).
Not part of the installed package."""
