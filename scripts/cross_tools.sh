# Sourced by scripts/test.sh: install the Debian packages of the Cortex-M
# tests' tools (arm-none-eabi-gcc with newlib, qemu-system-arm) with apt-get
# when they are missing, as root or through password-less sudo. Where that
# cannot be done the reason is printed and the suite runs anyway: those tests
# skip, saying why. TIGRIS_NO_APT=1 leaves the system as it is.

# The packages of the tools the Cortex-M tests need that are not installed.
missing_packages() {
    if ! command -v arm-none-eabi-gcc >/dev/null 2>&1; then
        echo gcc-arm-none-eabi libnewlib-arm-none-eabi
    else
        local libc
        libc="$(arm-none-eabi-gcc -mthumb -mcpu=cortex-m4 -print-file-name=libc.a 2>/dev/null || true)"
        [[ "$libc" == /* && -f "$libc" ]] || echo libnewlib-arm-none-eabi
    fi
    command -v qemu-system-arm >/dev/null 2>&1 || echo qemu-system-arm
}

install_cross_tools() {
    local packages
    packages="$(missing_packages | tr '\n' ' ')"
    packages="${packages% }"
    [[ -z "$packages" ]] && return 0
    local as=()
    if [[ "$(id -u)" -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
            as=(sudo -n)
        else
            echo "cross tools: not installing $packages: not root and no password-less sudo" \
                "(the Cortex-M tests will skip)"
            return 0
        fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "cross tools: not installing $packages: no apt-get here (the Cortex-M tests will skip)"
        return 0
    fi
    echo "cross tools: installing $packages"
    # shellcheck disable=SC2086  # one word per package
    if ! { ${as[@]+"${as[@]}"} apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive ${as[@]+"${as[@]}"} apt-get install -y -qq \
            --no-install-recommends $packages; }; then
        echo "cross tools: apt-get could not install $packages (the Cortex-M tests will skip)"
    fi
}
