# Sourced by scripts/bench.sh and scripts/bench_ab.sh: installs the Debian packages that the
# benchmarks need (as root, with apt-get), then checks the required tools.
#
#   bench_install_deps [EXTRA_PACKAGE...]
#
# The first six packages are required, the rest are optional peers (and plots); extra
# packages (bench_ab.sh: git, libbenchmark-tools, python3-scipy) are added to the list. A
# tool counts as present by its command (it may come from elsewhere), a library by dpkg.
bench_install_deps() {
    local packages=(meson ninja-build g++ pkg-config python3 libbenchmark-dev
                    libsleef-dev libopenblas-dev libblis-dev libdnnl-dev python3-matplotlib "$@")
    local -A command_of=([meson]=meson [ninja-build]=ninja [g++]=g++ [pkg-config]=pkg-config [python3]=python3
                         [git]=git)
    local missing=() p tool
    for p in "${packages[@]}"; do
        if [[ -n ${command_of[$p]:-} ]]; then
            command -v "${command_of[$p]}" >/dev/null || missing+=("$p")
        elif command -v dpkg-query >/dev/null; then
            dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
        fi
    done
    if ((${#missing[@]})) && ((EUID == 0)) && command -v apt-get >/dev/null; then
        echo "==> installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
    for tool in meson ninja g++ pkg-config python3; do
        command -v "$tool" >/dev/null || { echo "${0##*/}: $tool not found (run as root to install)" >&2; exit 1; }
    done
}
