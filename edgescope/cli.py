"""The `edgescope` command: serve, worker, db, analyze, upload, and the simulator's commands."""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from .commands.common import MODEL_ARGUMENT, keep_conversions
from .commands.echo import echo_inputs, echo_quality
from .config import Settings


def _parse_inputs(specs: tuple[str, ...], values: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    from compiler.inputs import parse_shape_args, parse_value_args

    try:
        shapes, vals = parse_shape_args(specs), parse_value_args(values)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    return shapes, vals


def _ensure_schema(settings: Settings) -> None:
    """A brand-new database is created; an old one is refused with the command to run."""
    from sqlalchemy import inspect

    from store.db import check_at_head, make_engine, upgrade

    engine = make_engine(settings.database_url)
    if not inspect(engine).get_table_names():
        upgrade(settings.database_url)
    check_at_head(engine)
    engine.dispose()


@click.group()
def main() -> None:
    """Edgescope: profile ML models op by op and predict what compression does on device."""
    import logging

    # One-shot commands print their own results: the libraries' advice (ORT's quantizers log a warning per
    # LayerNorm weight, coremltools one per missing macOS framework) is noise there. `serve` and `worker`
    # configure logging for themselves, which sets the root level again.
    logging.getLogger().setLevel(logging.ERROR)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--threads", default=8, show_default=True, help="Web request threads.")
def serve(host: str, port: int, threads: int) -> None:
    """Run the web service (and, without EDGESCOPE_BROKER_URL, a worker in the same process)."""
    import logging

    from server.app import create_app
    from store.db import SchemaOutOfDate

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = Settings.from_env()
    try:
        _ensure_schema(settings)
        app = create_app(settings)
    except SchemaOutOfDate as e:
        raise click.ClickException(str(e)) from None
    from store.services import Services
    from worker.celery_app import enqueue
    from worker.reconcile import start_reconciler

    celery = app.extensions["celery"]
    keep_conversions(settings)
    if settings.embedded_worker:
        from worker.embedded import start_embedded_worker
        from worker.jobs import requeue_interrupted
        from worker.warmup import calibrate_in_background

        start_embedded_worker(celery)
        calibrate_in_background(settings)
        for job_id in requeue_interrupted(Services(settings)):
            enqueue(celery, job_id)
        mode = f"embedded worker, data in {settings.data_dir}"
    else:
        mode = f"jobs sent to {settings.broker_url.split('@')[-1]}"
    # Re-queues jobs whose worker died and jobs the broker lost; removes crashed jobs' temp folders.
    start_reconciler(Services(settings, pooled=False), lambda job_id: enqueue(celery, job_id))
    click.echo(f"Edgescope on http://{host}:{port}/ ({mode})", err=True)
    from server.serving import serve as serve_app

    serve_app(app, settings, host, port, threads)


@main.command()
@click.option("--concurrency", default=1, show_default=True, type=int)
@click.option("--loglevel", default="INFO", show_default=True)
def worker(concurrency: int, loglevel: str) -> None:
    """Run a separate Celery worker (needs EDGESCOPE_BROKER_URL)."""
    from worker.celery_app import make_celery

    settings = Settings.from_env()
    if settings.embedded_worker:
        raise click.ClickException("Set EDGESCOPE_BROKER_URL (e.g. redis://127.0.0.1:6379/0) to run separate "
                                   "workers; without it `edgescope serve` runs its own.")
    from store.services import Services
    from worker.celery_app import enqueue
    from worker.reconcile import start_reconciler
    from worker.warmup import calibrate_in_background

    app = make_celery(settings)
    keep_conversions(settings)  # before the pool's children fork: they inherit it
    calibrate_in_background(settings)
    # In the main process, beside the pool: it holds no database connection between ticks, so the pool
    # children Celery forks inherit none.
    start_reconciler(Services(settings, pooled=False), lambda job_id: enqueue(app, job_id))
    app.worker_main(["worker", f"--concurrency={concurrency}", f"--loglevel={loglevel}",
                     "--without-gossip", "--without-mingle"])


@main.group()
def db() -> None:
    """Database schema commands."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def db_upgrade(revision: str) -> None:
    """Migrate the database (EDGESCOPE_DATABASE_URL) to the newest schema."""
    from store.db import upgrade

    settings = Settings.from_env()
    upgrade(settings.database_url, revision)
    click.echo(f"database at {revision}", err=True)


@db.command("downgrade")
@click.argument("revision")
def db_downgrade(revision: str) -> None:
    """Migrate the database back to REVISION (e.g. base)."""
    from store.db import downgrade

    downgrade(Settings.from_env().database_url, revision)
    click.echo(f"database at {revision}", err=True)


def _analysis_json(result: Any, model_path: Path) -> dict[str, Any]:
    from worker import results

    targets = []
    for r in result.targets:
        table = results.ops_table(r, result.source)
        summary = results.target_summary(r, table)
        targets.append({
            "target": r.target, "latency_ms": summary["latency_ms"],
            "latency_p90_ms": summary["latency_p90_ms"], "peak_memory_bytes": summary["peak_memory_bytes"],
            "measured": summary["measured"], "label": summary["label"], "noise": summary["noise"],
            "work_unknown": summary["work_unknown"], "size_bytes": r.sweep.bulk["base"]["size_bytes"],
            "per_inference_ms": table["per_inference_ms"],
            "ops": [{"name": o["name"] or o["id"], "id": o["id"], "type": o["type"], "latency_ms": o["latency_ms"],
                     "measured": o["measured"], "macs": o["macs"], "work_unknown": o["work_unknown"],
                     "source_nodes": o["source_nodes"], "executions": o["executions"]} for o in table["ops"]],
        })
    src = result.source
    return {
        "model": {"name": model_path.name, "format": src.format, "op_count": len(src.nodes),
                  "size_bytes": model_path.stat().st_size},
        "inputs": [p.to_json() for p in result.inputs.values()],
        "targets": targets,
        "stage_seconds": result.stage_seconds,
    }


@main.command()
@MODEL_ARGUMENT
@click.option("--target", "targets", multiple=True, help="Target (repeatable); default ort-cpu/host.")
@click.option("--format", "fmt", default=None, help="Override format detection.")
@click.option("--input", "inputs", multiple=True, metavar="NAME=1x3x224x224", help="Input shape override.")
@click.option("--input-value", "values", multiple=True, metavar="NAME=16000", help="Fill an input with a value.")
@click.option("--runs", default=30, show_default=True, type=int)
@click.option("--threads", default=1, show_default=True, type=int)
@click.option("--top", default=10, show_default=True, type=int, help="Ops to list by time.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (schema in README).")
def analyze(model: Path, targets: tuple[str, ...], fmt: str | None, inputs: tuple[str, ...],
            values: tuple[str, ...], runs: int, threads: int, top: int, as_json: bool) -> None:
    """Run the whole pipeline locally, without a server, and print totals and the slowest ops."""
    from worker.pipeline import STAGE_WEIGHT, STAGES, AnalysisOptions, analyze as run, user_errors

    from compiler.frontends import detect
    from compiler.vocabulary.targets import default_targets, runs_format

    settings = Settings.from_env()
    keep_conversions(settings)
    shapes, vals = _parse_inputs(inputs, values)
    try:
        if not targets:  # the configured defaults that run this format, else the format's own
            detected = detect(model, fmt)
            targets = tuple(t for t in settings.default_targets or () if runs_format(t, detected)) \
                or tuple(default_targets(detected))
    except user_errors() as e:
        raise click.ClickException(str(e)) from None
    opts = AnalysisOptions(targets=targets, format=fmt, input_shapes=shapes,
                           input_values=vals, runs=runs, threads=threads,
                           calibration_path=settings.calibration_path, check_exports=settings.export_check,
                           remeasure_pause_s=settings.profile_remeasure_pause_ms / 1000,
                           fast_rounds=settings.profile_fast_rounds)
    show = sys.stderr.isatty() and not as_json

    def progress(stage: str, frac: float) -> None:
        if show:
            done = sum(STAGE_WEIGHT[s] for s in STAGES[: STAGES.index(stage)]) + STAGE_WEIGHT[stage] * frac
            bar = "#" * int(done / 4)
            click.echo(f"\r[{bar:<25}] {done:5.1f}% {stage:<9}", nl=False, err=True)

    try:
        with tempfile.TemporaryDirectory(prefix="edgescope-analyze-") as d:
            result = run(model, Path(d), opts, progress)
            doc = _analysis_json(result, model)
    except user_errors() as e:
        raise click.ClickException(str(e)) from None
    if show:
        click.echo("", err=True)
    if as_json:
        click.echo(json.dumps(doc, indent=1))
        return
    m = doc["model"]
    click.echo(f"{m['name']}: {m['format']}, {m['op_count']} ops, {m['size_bytes'] / 1e6:.2f} MB")
    echo_inputs(doc["inputs"])
    for t in doc["targets"]:
        click.echo(f"\n{t['target']}: {t['latency_ms']:.3f} ms, peak memory "
                   f"{t['peak_memory_bytes'] / 1e6:.1f} MB ({t['label']})")
        echo_quality(t)
        ops = sorted(t["ops"], key=lambda o: -(o["latency_ms"] or 0))[:top]
        for o in ops:
            tag = "" if o["measured"] else " (predicted)"
            click.echo(f"  {o['latency_ms'] or 0:9.4f} ms  {o['type']:<20} {o['name']}{tag}")


@main.command()
@click.argument("model", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--server", default="http://127.0.0.1:8000", show_default=True, envvar="EDGESCOPE_SERVER")
@click.option("--name", default=None)
@click.option("--input", "inputs", multiple=True, metavar="NAME=1x3x224x224")
@click.option("--input-value", "values", multiple=True, metavar="NAME=16000")
@click.option("--target", "targets", multiple=True)
@click.option("--wait/--no-wait", default=False, help="Wait until the analysis ends.")
def upload(model: Path, server: str, name: str | None, inputs: tuple[str, ...], values: tuple[str, ...],
           targets: tuple[str, ...], wait: bool) -> None:
    """Upload MODEL to a server and print its shareable URL."""
    import requests

    shapes, vals = _parse_inputs(inputs, values)
    data: dict[str, str] = {"inputs": json.dumps(shapes), "input_values": json.dumps(vals)}
    if name:
        data["name"] = name
    if targets:
        data["targets"] = json.dumps(list(targets))
    base = server.rstrip("/")
    http = _authed_session(base)
    try:
        with contextlib.ExitStack() as stack:
            files = [("file", (model.name, stack.enter_context(open(model, "rb"))))]
            files += [("data", (p.name, stack.enter_context(open(p, "rb")))) for p in _data_files(model)]
            r = http.post(f"{base}/api/models", files=files, data=data, timeout=600)
    except requests.RequestException as e:
        raise click.ClickException(f"could not reach {base}: {e}") from None
    body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
    if r.status_code != 201:
        raise click.ClickException(f"upload refused ({r.status_code}): {body.get('error', r.text[:200])}")
    click.echo(body["url"])
    while wait:
        m = http.get(f"{base}/api/models/{body['id']}", timeout=30).json()
        if m["status"] in ("ready", "failed"):
            click.echo(f"{m['status']}{': ' + m['error'] if m['error'] else ''}", err=True)
            if m["status"] == "failed":
                sys.exit(1)
            return
        time.sleep(1)


def _data_files(model: Path) -> list[Path]:
    """The external data files an ONNX model names that lie beside it: sent with it, and the server checks and
    merges them (compiler.external_data), so a missing or wrong one gets the server's answer."""
    from compiler.external_data import external_locations, may_name_external_data, plain_name

    if model.suffix.lower() != ".onnx" or not may_name_external_data(model):
        return []
    return [model.parent / loc for loc in external_locations(model) or []
            if plain_name(loc) and (model.parent / loc).is_file()]


def _credentials_path() -> Path:
    import os

    default = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "edgescope" / "credentials.json"
    return Path(os.environ.get("EDGESCOPE_CREDENTIALS", default))


def _authed_session(base: str):  # type: ignore[no-untyped-def]
    """A requests session carrying the API token for `base` (EDGESCOPE_TOKEN, else `edgescope login`'s)."""
    import os

    import requests

    token = os.environ.get("EDGESCOPE_TOKEN")
    if not token:
        path = _credentials_path()
        saved = json.loads(path.read_text()) if path.is_file() else {}
        token = saved.get(base)
    if not token:
        raise click.ClickException(f"Not signed in to {base}: run `edgescope login --server {base}` "
                                   f"(or set EDGESCOPE_TOKEN).")
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {token}"
    return http


@main.command()
@click.option("--server", default="http://127.0.0.1:8000", show_default=True, envvar="EDGESCOPE_SERVER")
@click.option("--email", prompt=True)
@click.option("--password", prompt=True, hide_input=True, envvar="EDGESCOPE_PASSWORD")
def login(server: str, email: str, password: str) -> None:
    """Sign in to a server and save a personal API token for the other commands."""
    import os
    import socket

    import requests

    base = server.rstrip("/")
    try:
        r = requests.post(f"{base}/api/auth/token", timeout=30,
                          json={"email": email, "password": password, "name": f"CLI on {socket.gethostname()}"})
    except requests.RequestException as e:
        raise click.ClickException(f"could not reach {base}: {e}") from None
    if r.status_code != 201:
        raise click.ClickException(f"sign-in refused ({r.status_code}): {r.json().get('error', r.text[:200])}")
    path = _credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = json.loads(path.read_text()) if path.is_file() else {}
    saved[base] = r.json()["token"]
    # The token is a password: readable by this user only.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(saved, f, indent=1)
    click.echo(f"signed in to {base} as {email}; token saved in {path}", err=True)


@main.group()
def users() -> None:
    """Accounts, for admins of this server (uses EDGESCOPE_DATABASE_URL directly)."""


@users.command("create")
@click.argument("email")
@click.option("--name", default="")
@click.option("--admin", is_flag=True, help="Make the account an admin.")
@click.password_option(envvar="EDGESCOPE_PASSWORD")
def users_create(email: str, name: str, admin: bool, password: str) -> None:
    """Create an account (e.g. the first one, when sign-up is closed)."""
    from server.api.auth import create_user
    from server.api.errors import ApiError
    from store.db import session_scope
    from store.services import Services

    settings = Settings.from_env()
    _ensure_schema(settings)
    try:
        with session_scope(Services(settings).sessions) as s:
            u = create_user(s, email, password, name)
            u.is_admin = u.is_admin or admin
            click.echo(f"created {u.email}{' (admin)' if u.is_admin else ''}", err=True)
    except ApiError as e:
        raise click.ClickException(e.message) from None


def _add_commands() -> None:
    from .commands import export_pt2, simulate, solve

    for c in (*simulate.commands, *solve.commands, *export_pt2.commands):
        main.add_command(c)


_add_commands()
