# Sourced by scripts/install and scripts/test: installs Debian packages that
# are missing (and only those), as root or through sudo.
rat_apt_install() {
    local missing=()
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
        sudo=(sudo)
    fi
    echo "Installing Debian packages: ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# What building and running rat-py needs (and node, below). libczmq-dev: czmq
# makes and drives the kernel's ZeroMQ sockets (bridge/jupyter/kernel_zmq.c),
# and its zdigest (SHA-1) checks a gateway's WebSocket upgrade (RFC 6455); its
# runtime, libczmq4, comes with it (and in the .deb through dpkg-shlibdeps).
# libedit-dev: the headers of libedit, which the `rat NAME` REPL loads at run
# time for line editing and history (bridge/rat/edit_dl.c; not linked).
RAT_BUILD_PKGS=(build-essential cmake pkg-config libzmq3-dev libczmq-dev libsodium-dev libjson-c-dev libyaml-dev
                libmicrohttpd-dev libcurl4-openssl-dev libwslay-dev libedit-dev)

# node and npm build the notebook page (web/: `npm ci` of its pinned packages,
# then esbuild; without them rat-py builds without the page) and run the
# tests. Debian's nodejs and npm only when there is no node at all: a node
# installed another way (NodeSource's nodejs package bundles npm) stays.
rat_need_node() {
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        rat_apt_install nodejs npm
    fi
}

# The test tools pinned in tests/package-lock.json, into tests/node_modules.
# `npm ci` refuses this lock: Inspector 2 pulls in vite, whose Windows-only
# optional dependency napi-windows-process-start-time the npm registry here
# does not serve (404), so the lock cannot name it and npm ci calls it out of
# sync. Then `npm install`, which installs exactly the locked versions too;
# the lock must come out unchanged, or we stop.
rat_npm_tests() {
    (cd tests && npm ci --no-audit --no-fund --loglevel=error 2>/dev/null) && return 0
    echo "npm ci refused tests/package-lock.json (an optional package the registry lacks); npm install of the same lock"
    local saved
    saved=$(mktemp)
    cp tests/package-lock.json "$saved"
    (cd tests && npm install --no-audit --no-fund --loglevel=error) || { rm -f "$saved"; return 1; }
    if ! cmp -s "$saved" tests/package-lock.json; then
        cp "$saved" tests/package-lock.json
        rm -f "$saved"
        echo "npm install changed tests/package-lock.json: the pinned versions no longer resolve" >&2
        return 1
    fi
    rm -f "$saved"
}
RAT_RUN_PKGS=(python3-ipykernel)
# What scripts/test needs on top: jupyter_client for the wire interop test
# and the fake kernel (with pyzmq), numpy/pandas for look's tests, clang with
# its libFuzzer/sanitizer runtimes for the fuzz harnesses, valgrind;
# matplotlib for the assets tests, dpkg-dev and file for the package test,
# python3-yaml to read back the config `rat-py install` writes, and
# r-cran-irkernel (R and IRkernel, which registers the `ir` kernelspec; big,
# it pulls in R) for the R tests; chromium for the notebook page's browser
# tests (tests/integration/page.test.mjs, driven by playwright-core) and
# python3-nbformat to validate the notebooks it saves; python3-nbclient to
# make a notebook the way Jupyter executes one (notebook.test.mjs's round
# trip, which reads the page's through python3-jupyter-server's contents
# manager); debhelper and dh-python, which dpkg-buildpackage needs to build
# the Debian packages from debian/ (integration.package; by hand, `apt-get
# build-dep ./` installs the Build-Depends), and lintian, which checks them;
# libnss3-tools (certutil) so that Chromium trusts the CA
# tests/integration/http_tls.test.mjs makes; python3-venv (ensurepip), for
# the venvs integration.wheel makes (the PyPI build tools, the wheel's fresh
# venv) and those tests/peers/setup.sh makes for the real peers.
RAT_TEST_PKGS=(python3-jupyter-client python3-zmq python3-numpy python3-pandas python3-matplotlib clang-14
               libclang-rt-14-dev valgrind dpkg-dev file python3-yaml r-cran-irkernel python3-jupyter-server
               chromium python3-nbformat python3-nbclient debhelper dh-python lintian libnss3-tools python3-venv)
