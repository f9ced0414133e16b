# The harness image: Debian's Chromium, Xvfb and a window manager, plus the project.
# Build: docker build -t cua-harness .    (podman build works the same)
# Run:   docker run --rm cua-harness --help
# Without a registry: any Debian 12 image with Python 3.11 and pip on PATH (e.g. made with
# debootstrap + podman import) works as --build-arg BASE_IMAGE=<that image>.
ARG BASE_IMAGE=python:3.11-slim-bookworm
FROM ${BASE_IMAGE}

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    CUA_CHROMIUM=/usr/bin/chromium

RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      chromium xvfb openbox xdotool xterm python3-tk bubblewrap iproute2 \
      fonts-dejavu-core fonts-dejavu-extra fonts-liberation fonts-urw-base35 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/cua
COPY pyproject.toml README.md ./
COPY harness ./harness
COPY sandboxes ./sandboxes
COPY fsm_sites ./fsm_sites
COPY trainers ./trainers
RUN pip install --no-cache-dir .

# The sandbox server arrives with the desktop/containers work; until then the entry
# point is the CLI itself.
ENTRYPOINT ["cua"]
CMD ["--help"]
