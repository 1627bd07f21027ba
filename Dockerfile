# syntax=docker/dockerfile:1
# flexq's fallback image: flexq's core install (the twin, the CLI and `flexq fallback`; no Ray, JAX or
# matplotlib) on Python 3.11, run as a non-root user. Build it from a checkout, or from a git URL at a commit:
#   docker build -t REGISTRY/flexq-fallback:0.1.0 .
#   docker build -t REGISTRY/flexq-fallback:0.1.0 'https://github.com/OWNER/flexq.git#COMMIT'
# push it, and deploy it by its digest (see `flexq fallback manifests --help`):
#   flexq fallback manifests --image REGISTRY/flexq-fallback@sha256:DIGEST | kubectl apply -f -
# Every package is installed from a lock that pins it with its hashes (tools/lock-fallback.sh writes both
# locks); pin the base image too: --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:DIGEST.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
# where things go (build arguments, so that the steps below can be run, and tested, elsewhere)
ARG VENV=/opt/flexq
ARG BUILD_VENV=/tmp/build-venv
ARG WHEELS=/tmp/wheels
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY deploy/build-requirements.txt src/flexq/cli/deploy/requirements.txt locks/
RUN python -m venv "${BUILD_VENV}" \
    && "${BUILD_VENV}/bin/pip" install --no-cache-dir --require-hashes --only-binary=:all: -r locks/build-requirements.txt
COPY pyproject.toml README.md ./
COPY src src/
RUN "${BUILD_VENV}/bin/pip" wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir "${WHEELS}" . \
    && python -m venv "${VENV}" \
    && "${VENV}/bin/pip" install --no-cache-dir --require-hashes --only-binary=:all: -r locks/requirements.txt \
    && "${VENV}/bin/pip" install --no-cache-dir --no-index --no-deps --find-links "${WHEELS}" "flexq==0.1.0" \
    && "${VENV}/bin/pip" check \
    && "${VENV}/bin/flexq" --version

FROM ${PYTHON_IMAGE}
ARG VENV=/opt/flexq
COPY --from=build ${VENV} ${VENV}
ENV PATH=${VENV}/bin:${PATH} PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 HOME=/tmp
# a numeric non-root user, so that the kubelet can check runAsNonRoot (Pod Security Standards "restricted")
USER 65532:65532
ENTRYPOINT ["flexq"]
CMD ["fallback", "--in-cluster"]
