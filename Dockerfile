# The harness image: Debian's Chromium, Xvfb and a window manager, plus the project in a venv.
# Build: docker build -t cua-harness .    (podman build works the same)
# Run:   docker run --rm cua-harness --help
#        docker run --rm --network none -v /tmp/cua:/run/cua -e CUA_ENV_TOKEN=T \
#          cua-harness env-server --unix /run/cua/env.sock     (the docker provider adds
#          --expose oracle,jump, the trainer-only calls; see docs/security.md)
# The base image is a build argument: any Debian 12 image with python3 (3.11) and its venv
# module works, e.g. one made without a registry by debootstrap + `podman import`
# (scripts/podman_setup.sh does that): --build-arg BASE_IMAGE=<image>.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    CUA_CHROMIUM=/usr/bin/chromium \
    PATH=/opt/venv/bin:$PATH

# libatomic1: the Playwright driver's node needs it (Debian's chromium does not pull it in).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      chromium xvfb openbox xdotool xterm python3-tk bubblewrap iproute2 ca-certificates libatomic1 \
      fonts-dejavu-core fonts-dejavu-extra fonts-liberation fonts-urw-base35 fonts-inter fonts-roboto fonts-noto-core \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/venv

WORKDIR /opt/cua
# The dependencies first, from pyproject.toml alone: a change to the code rebuilds only the
# layers below. A wheelhouse in .wheelhouse/ (scripts/podman_setup.sh makes one with the
# host's pip) installs them without an index, e.g. behind a proxy the image does not trust;
# without one (the pattern matches nothing) pip uses its index.
COPY pyproject.toml .wheelhous[e] /tmp/deps/
# The core, and the extras an env server's tasks use: desktop (the X display) and miniwob.
RUN python3 -c "import tomllib; d = tomllib.load(open('/tmp/deps/pyproject.toml', 'rb')); p = d['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['desktop'] + p['optional-dependencies']['miniwob'] + d['build-system']['requires']))" > /tmp/deps/requirements.txt \
 && if ls /tmp/deps/*.whl >/dev/null 2>&1; then \
      pip install --no-index --find-links /tmp/deps -r /tmp/deps/requirements.txt; \
    else pip install -r /tmp/deps/requirements.txt; fi \
 && rm -rf /tmp/deps
COPY pyproject.toml README.md ./
COPY harness ./harness
COPY sandboxes ./sandboxes
COPY fsm_sites ./fsm_sites
COPY trainers ./trainers
RUN pip install --no-deps --no-build-isolation .

ENTRYPOINT ["cua"]
CMD ["--help"]
