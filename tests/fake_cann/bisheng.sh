#!/usr/bin/env bash
# FAKE bisheng, assembled by the pypto-rs tests. This is NOT the CANN
# compiler: it checks the flags pypto-build sends, records them, and
# compiles the kernel for the host against the host emulation.
set -u
FAKE_HOME='@FAKE_HOME@'
# `asc` for a toolkit of CANN 8.5 or later, `cce` for an older one.
FRONTEND='@FRONTEND@'
LOG="$FAKE_HOME/fake-bisheng.log"
CXX="${PYPTO_FAKE_HOST_CXX:-c++}"
TIKCPP="$FAKE_HOME/compiler/tikcpp/tikcfw"

die() {
    echo "fake bisheng: error: $*" >&2
    exit 1
}

argv=("$@")
compile=0 shared="" src="" out="" lang="" npu_arch="" cce_arch=""
pass=() incs=()
i=0
while [ "$i" -lt "$#" ]; do
    a="${argv[$i]}"
    case "$a" in
        -c) compile=1 ;;
        -shared) shared=1 ;;
        # pypto-build re-checks a rejected source to capture the message.
        -fsyntax-only) compile=2 ;;
        -o) i=$((i + 1)); out="${argv[$i]}" ;;
        -x) i=$((i + 1)); lang="${argv[$i]}" ;;
        -x*) lang="${a#-x}" ;;
        --npu-arch=*) npu_arch="${a#--npu-arch=}" ;;
        --cce-aicore-arch=*) cce_arch="${a#--cce-aicore-arch=}" ;;
        --cce-auto-sync) auto_sync=1 ;;
        -I) i=$((i + 1)); incs+=("${argv[$i]}"); pass+=("-I${argv[$i]}") ;;
        -I*) incs+=("${a#-I}"); pass+=("$a") ;;
        -DPYPTO_HOST_BACKEND*) die "the host backend's PYPTO_HOST_BACKEND reached the NPU compiler" ;;
        *.cpp | *.cc | *.cxx | *.asc) src="$a" ;;
        *) pass+=("$a") ;;
    esac
    i=$((i + 1))
done

# `-shared`: link NPU objects into a shared library, as bisheng documents
# (`bisheng -shared … -o lib….so -fPIC --npu-arch=…`). Here the objects are
# host code against the emulation; their launches reach the fake runtime
# through the libascendcl on the link line (its soname becomes a NEEDED
# entry, matched at run time by the copy pypto-rt has already loaded).
if [ -n "${shared:-}" ]; then
    printf '%s\n' "$*" >>"$LOG"
    [ "$compile" -eq 0 ] || die "-shared links objects; it does not take -c"
    [ -z "$lang" ] || die "-x $lang before the objects of a link would compile them as source"
    [ -z "$cce_arch" ] || die "--cce-aicore-arch does not belong on a link line"
    if [ "$FRONTEND" = asc ]; then
        case "$npu_arch" in
            dav-2201 | dav-3510) ;;
            "") die "missing --npu-arch" ;;
            *) die "unknown --npu-arch=$npu_arch (expected dav-2201 or dav-3510)" ;;
        esac
    else
        [ -z "$npu_arch" ] || die "--npu-arch needs CANN 8.5 or later"
    fi
    [ -n "$out" ] || die "missing -o"
    [ -z "${PYPTO_FAKE_BISHENG_FAIL_LINK:-}" ] || die "cannot link $npu_arch (injected)"
    printf '%s\n' "${pass[@]+"${pass[@]}"}" | grep -qx -- -fPIC || die "-shared without -fPIC"
    printf '%s\n' "${pass[@]+"${pass[@]}"}" | grep -qx -- -lascendcl || die "missing -lascendcl"
    exec "$CXX" -shared "${pass[@]+"${pass[@]}"}" -Wl,--no-undefined -o "$out"
fi

# Anything but a compile (cc probing which compiler this is) goes to the
# host compiler untouched.
if [ "$compile" -eq 0 ] || [ -z "$src" ]; then
    exec "$CXX" "$@"
fi

printf '%s\n' "$*" >>"$LOG"

has_inc() {
    local want="$1" d
    for d in "${incs[@]+"${incs[@]}"}"; do
        [ "$d" = "$want" ] && return 0
    done
    return 1
}

for d in "${incs[@]+"${incs[@]}"}"; do
    case "$d" in
        */pypto/include) die "the host emulation headers ($d) reached the NPU compiler" ;;
    esac
done

target950=0
if [ "$FRONTEND" = asc ]; then
    [ "$lang" = asc ] || die "CANN 8.5+ compiles Ascend C with -x asc, got '${lang:-no -x}'"
    [ -z "$cce_arch" ] || die "--cce-aicore-arch is for toolkits before CANN 8.5"
    case "$npu_arch" in
        dav-2201) ;;
        dav-3510) target950=1 ;;
        "") die "missing --npu-arch" ;;
        *) die "unknown --npu-arch=$npu_arch (expected dav-2201 or dav-3510)" ;;
    esac
else
    [ "$lang" = cce ] || die "toolkits before CANN 8.5 compile Ascend C with -xcce, got '${lang:-no -x}'"
    [ -z "$npu_arch" ] || die "--npu-arch needs CANN 8.5 or later"
    case "$cce_arch" in
        dav-c220-vec | dav-c220-cube) ;;
        dav-c310-vec | dav-c310-cube) target950=1 ;;
        "") die "missing --cce-aicore-arch" ;;
        *) die "unknown --cce-aicore-arch=$cce_arch" ;;
    esac
    for d in "$TIKCPP" "$TIKCPP/impl" "$TIKCPP/interface"; do
        has_inc "$d" || die "missing include dir -I$d"
    done
fi
# The host emulation's racecheck orders the scalar unit as this option does.
[ -n "${auto_sync:-}" ] || die "missing --cce-auto-sync"
[ -n "$out" ] || [ "$compile" -eq 2 ] || die "missing -o"

# The triple-chevron launch becomes a call the fake runtime runs on the host.
if [ -n "$out" ]; then
    rewritten="$out.fake-npu.cpp"
else
    rewritten="${TMPDIR:-/tmp}/fake-bisheng-$$.cpp"
fi
# `#line` keeps diagnostics pointing at the source pypto-build wrote.
{
    printf '#line 1 "%s"\n' "$src"
    # A templated kernel's arguments (`k<float, 5><<<…>>>`) go with its name.
    sed -E 's/([A-Za-z_][A-Za-z0-9_]*(<[^<>;]*>)?)[[:space:]]*<<<([^>]*)>>>/pypto_fake_npu::launch(\1, \3)/g' "$src"
} >"$rewritten" || die "cannot rewrite $src"
extra=("-DPYPTO_FAKE_NPU=1")
[ "$target950" -eq 1 ] && extra+=("-DPYPTO_TARGET_950=1")
if [ "$compile" -eq 2 ]; then
    exec "$CXX" -x c++ "${pass[@]+"${pass[@]}"}" "${extra[@]+"${extra[@]}"}" -I"$TIKCPP" \
        -include "$TIKCPP/pypto_fake_npu.h" -fsyntax-only "$rewritten"
fi
exec "$CXX" -x c++ "${pass[@]+"${pass[@]}"}" "${extra[@]+"${extra[@]}"}" -I"$TIKCPP" \
    -include "$TIKCPP/pypto_fake_npu.h" -c "$rewritten" -o "$out"
