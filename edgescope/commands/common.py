"""What the simulator's commands share (`predict`, `optimize`, `options`, `calibrate`, `solve`): input shapes and
values on the command line, `--op` overrides, the calibration file, and the errors shown to the user as such."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from edgescope.config import Settings


def calibration_path(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    from edgescope.config import Settings

    return Path(Settings.from_env().calibration_path)


def ensure_calibrated(targets: tuple[str, ...] | list[str], path: Path, model: Path | None = None) -> None:
    """Calibrate the host first, saying so, when a host target is asked for on a machine without a calibration:
    `predict --target ort-cpu/host` otherwise sat silent for minutes while kernels were timed. Progress goes to
    stderr, so `--json` output stays one object. A target that cannot run `model`'s format is refused first (a
    .tflite on ort-cpu/host calibrated for minutes before it was told so)."""
    from compiler.vocabulary.targets import check_targets_format, get_target
    from simulator import calibration, litert_calibration

    if model is not None:
        from compiler.frontends import detect

        try:
            check_targets_format(list(targets), detect(model))
        except user_errors() as e:
            fail(str(e))
    hosts = [get_target(t) for t in targets if get_target(t).profile == "host-cpu"]
    if not hosts:
        return
    echo = lambda s: click.echo(s, err=True)  # noqa: E731
    if (why := calibration.stale_reason(path)) is not None:
        echo(f"No current host calibration at {path} ({why}): timing ONNX Runtime kernels now and writing it there, "
             "once per machine (a few minutes; `edgescope calibrate` does it ahead of time).")
    hw = calibration.load_or_calibrate(path, progress=echo)
    if any(t.backend == "litert-cpu" for t in hosts):
        if not litert_calibration.is_cached(path):
            echo("Timing LiteRT (XNNPACK) kernels now, once per machine (about a minute).")
        litert_calibration.with_litert(hw, path, progress=echo)


def keep_conversions(settings: Settings | None = None) -> None:
    """Keep converted .pt2 files in the data dir's cache (`serve`, `worker` and the one-shot commands): a command
    converts a .pt2 once for all its targets (analyze of a MobileNetV2 .pt2 converted it to ONNX five times, to TFLite
    twice), and the next command on the same file not at all. `settings`: the caller's, else read from the env."""
    from compiler import conversion_cache
    from edgescope.config import Settings

    settings = settings if settings is not None else Settings.from_env()
    conversion_cache.configure(settings.conversion_cache_root, settings.conversion_cache_mb * 1024**2)


def fail(message: str) -> None:
    raise click.ClickException(message)


def parse_ops(ops: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for o in ops:
        if "=" not in o:
            fail(f"--op {o!r}: write NAME=OPTION, e.g. --op /conv1/Conv=int8/int8/int8/50")
        k, v = o.rsplit("=", 1)
        out[k.strip()] = v.strip()
    return out


def user_errors() -> tuple[type[BaseException], ...]:
    from compiler.errors import InputSpecError, ModelRunError, SandboxError
    from compiler.graph import ModelFormatError
    from compiler.vocabulary.options import OptionError

    return (OptionError, ModelFormatError, ModelRunError, InputSpecError, SandboxError)


def parse_inputs(inputs: tuple[str, ...], values: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    from compiler.errors import InputSpecError
    from compiler.inputs import parse_shape_args, parse_value_args

    try:
        return parse_shape_args(inputs), parse_value_args(values)
    except InputSpecError as e:
        raise click.BadParameter(str(e)) from None


INPUT_OPTIONS = [
    click.option("--input", "inputs", multiple=True, metavar="NAME=1x3x224x224",
                 help="Input shape (repeatable); other symbolic dims get defaults by input role, as `analyze`."),
    click.option("--input-value", "values", multiple=True, metavar="NAME=16000", help="Fill an input with a value."),
]


def target_option(help: str = "Default: where the model's format runs on this machine (ort-cpu/host; "
                  "litert-cpu/host for .tflite). See `edgescope options`.") -> Any:
    # multiple=True so that a repeated --target is seen (click keeps only the last of a single-valued option)
    return click.option("--target", "target", multiple=True, help=help)


def resolve_target(model: Path, targets: tuple[str, ...], command: str = "this command") -> str:
    """The one target given, or the first target the model's format runs on (a .tflite is not run on ort-cpu/host)."""
    if len(targets) > 1:
        fail(f"--target given {len(targets)} times ({', '.join(targets)}): {command} takes one target; run it once per "
             "target (`edgescope analyze` takes several)")
    if targets:
        return targets[0]
    from compiler.frontends import detect
    from compiler.vocabulary.targets import default_targets

    try:
        return default_targets(detect(model))[0]
    except user_errors() as e:
        fail(str(e))
        raise  # unreachable: fail raises


def with_inputs(f: Any) -> Any:
    for opt in reversed(INPUT_OPTIONS):
        f = opt(f)
    return f


def one_file_model(ctx: Any, param: Any, value: Path) -> Path:
    """Click callback of the MODEL argument: an ONNX file with its weights in external data files beside it (torch's
    dynamo exporter writes them by default) is read as one file (compiler.external_data)."""
    from compiler.external_data import one_file_for_cli
    from compiler.graph import ModelFormatError

    try:
        return one_file_for_cli(value)
    except ModelFormatError as e:
        raise click.ClickException(str(e)) from None


MODEL_ARGUMENT = click.argument("model", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                                callback=one_file_model)
