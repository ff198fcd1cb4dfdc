"""Generated inputs: symbolic dims shared across inputs, overrides, CLI strings."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.errors import InputSpecError
from compiler.inputs import SEQ_DEFAULT, generate_inputs, parse_shape_arg, parse_shape_args, parse_value_arg, resolve_shapes


def test_defaults_keep_symbolic_dims_consistent(zoo) -> None:
    g = zoo.graph("dynamic_dims")
    shapes = resolve_shapes(g)
    assert shapes == {"input_ids": [1, SEQ_DEFAULT], "mask": [1, SEQ_DEFAULT]}
    assert resolve_shapes(g, {"input_ids": [2, 7]}) == {"input_ids": [2, 7], "mask": [2, 7]}


def test_generated_values_by_dtype(zoo) -> None:
    g = zoo.graph("dynamic_dims")
    feeds = generate_inputs(g, {"input_ids": [3, 50]})
    ids, mask = feeds["input_ids"], feeds["mask"]
    # ids index the 100-row embedding; the mask attends to everything
    assert ids.dtype == np.int64 and ids.shape == (3, 50) and ids.min() >= 0 and ids.max() < 100
    assert mask.dtype == np.bool_ and mask.all()
    again = generate_inputs(g, {"input_ids": [3, 50]})
    assert np.array_equal(again["input_ids"], ids)  # seeded: same inputs every run
    x = generate_inputs(zoo.graph("tiny_cnn"))["input"]
    assert x.dtype == np.float32 and x.shape == (1, 3, 16, 16) and 0.5 < x.std() < 1.5


def test_value_override_fills_input(zoo) -> None:
    feeds = generate_inputs(zoo.graph("dynamic_dims"), values={"input_ids": 7})
    assert (feeds["input_ids"] == 7).all() and feeds["input_ids"].shape == (1, SEQ_DEFAULT)
    ranged = generate_inputs(zoo.graph("dynamic_dims"), ranges={"input_ids": [3, 5]})
    assert set(np.unique(ranged["input_ids"])) <= {3, 4}


def test_parse_cli_strings() -> None:
    assert parse_shape_arg("x=1x3x48x320") == ("x", [1, 3, 48, 320])
    assert parse_shape_args(["a=2", "b=scalar"]) == {"a": [2], "b": []}
    assert parse_value_arg("sr=16000") == ("sr", 16000)
    assert parse_value_arg("t=0.5") == ("t", 0.5)
    assert parse_value_arg("flag=true") == ("flag", True)
    for bad in ("x", "=3", "x=1xfoo"):
        with pytest.raises(InputSpecError):
            parse_shape_arg(bad)
    with pytest.raises(InputSpecError, match="number or true/false"):
        parse_value_arg("sr=fast")
