"""Where each artifact lives in the blob store. One place, so readers and writers agree."""


def upload(model_id: str, filename: str) -> str:
    return f"models/{model_id}/upload/{filename}"


def model_prefix(model_id: str) -> str:
    return f"models/{model_id}"


def result(model_id: str, kind: str, target: str = "", ext: str = "json", job_id: str = "") -> str:
    """An analysis result. With `job_id` the key belongs to that job alone, so a stored key never changes
    content: a re-analysis writes new keys, and caches keyed by blob key cannot serve the old results."""
    # Target names hold a slash ("ort-cpu/host"); keep it as a folder level.
    where = f"targets/{target}/" if target else ""
    job = f"jobs/{job_id}/" if job_id else ""
    return f"models/{model_id}/{job}{where}{kind}.{ext}"


def export(model_id: str, export_id: str, filename: str) -> str:
    """An export's file, its extension taken from the filename the worker wrote (a Core ML package is
    zipped: `.mlpackage.zip`), so the worker and the download route derive the same key."""
    ext = "mlpackage.zip" if filename.endswith(".mlpackage.zip") else filename.rsplit(".", 1)[-1]
    return result(model_id, f"export-{export_id}", "", ext)
