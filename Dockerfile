# One image for the web process and the workers (docker-compose.yml picks the command).
FROM node:20-bookworm-slim AS web
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/ ./
RUN npm run build

FROM python:3.11-slim-bookworm
WORKDIR /app
# PyPI's Linux torch wheels pull several GB of CUDA libraries; the CPU build (2.13.0+cpu satisfies the
# lock's ==2.13.0) comes from PyTorch's CPU index.
ENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
COPY pyproject.toml requirements.lock requirements-litert-torch.lock README.md ./
# litert-torch (.pt2 -> .tflite) in its own venv: its pins clash with ours. Found at this default path.
RUN python -m venv .venv-litert-torch \
    && .venv-litert-torch/bin/pip install --no-cache-dir -r requirements-litert-torch.lock
COPY compiler compiler
COPY simulator simulator
COPY worker worker
COPY server server
COPY store store
COPY edgescope edgescope
COPY migrations migrations
# [torch]: .pt2 uploads are converted with torch (2.13.0, pinned in the lock).
RUN pip install --no-cache-dir -c requirements.lock -e ".[torch]"
COPY --from=web /src/web/dist web/dist
ENV EDGESCOPE_DATA_DIR=/data
EXPOSE 8000
CMD ["edgescope", "serve", "--host", "0.0.0.0", "--port", "8000"]
