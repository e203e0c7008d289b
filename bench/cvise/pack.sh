#!/usr/bin/env bash
# Packs Debian 12's C-Vise 2.7.0 (installed here by scripts/setup.sh) with every library it needs
# that the GPU machine (Ubuntu 24.04, no LLVM 15, no registry) lacks, for the duel's C-Vise side
# there: .device/cvise.txz, unpacked by bench/duel.sh and bench/jobs/h200_s15_cvise.sh.
#   bin/cvise        wrapper: DESTDIR and PYTHONPATH point C-Vise at this tree
#   usr/share/cvise  C-Vise's Python; usr/lib/cvise its helpers (clang_delta and clang-format-15
#                    through wrappers that put lib/ on LD_LIBRARY_PATH for themselves only)
#   lib/             libLLVM-15, libclang-cpp15 and their own needs; py/ pebble, chardet, psutil
# psutil is the cp36-abi3 wheel (the GPU machine's Python is 3.12; Debian's build is for 3.11),
# downloaded once into .whl/ (ignored).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v cvise >/dev/null || { echo "cvise-pack: cvise is not installed (scripts/setup.sh installs it)" >&2; exit 2; }
W=$(mktemp -d); B=$W/cvise
mkdir -p $B/usr/share $B/usr/lib/cvise/real $B/lib $B/py $B/bin .whl
cp -r /usr/share/cvise $B/usr/share/ && rm -rf $B/usr/share/cvise/tests
cp /usr/bin/cvise $B/bin/cvise_main
# C-Vise names /usr/bin/clang-format-15 outright; take ours beside it
sed -i "s|programs\['clang-format'\] = '/usr/bin/clang-format-15'|programs['clang-format'] = os.path.join(destdir, 'usr/lib/cvise/clang-format-15')|" $B/bin/cvise_main
grep -q "destdir, 'usr/lib/cvise/clang-format-15'" $B/bin/cvise_main || { echo "cvise-pack: C-Vise's clang-format line changed" >&2; exit 1; }
cp /usr/lib/cvise/clex /usr/lib/cvise/strlex /usr/lib/cvise/topformflat $B/usr/lib/cvise/
cp /usr/lib/cvise/clang_delta $B/usr/lib/cvise/real/
cp /usr/lib/llvm-15/bin/clang-format $B/usr/lib/cvise/real/clang-format-15
cp /usr/bin/unifdef $B/bin/
for l in $(ldd /usr/lib/cvise/clang_delta /usr/lib/llvm-15/bin/clang-format | awk '/=>/{print $3}' | sort -u); do
  case $(basename $l) in libc.so*|libm.so*|libstdc++*|libgcc_s*|libz.so*|libtinfo*|libffi*|liblzma*) ;;  # Ubuntu 24.04 has these
    *) cp -L $l $B/lib/ ;; esac
done
# ICU's 31 MB of data comes in through libxml2, which clang_delta never calls; a stub that defines
# the one symbol libicuuc takes from it keeps the pack and the tree within one call's 64 MiB.
echo 'const char icudt72_dat[16] = {0};' > $W/icudt.c
gcc -shared -fPIC -Wl,-soname,libicudata.so.72 -o $B/lib/libicudata.so.72 $W/icudt.c
for t in clang_delta clang-format-15; do
  printf '#!/bin/sh\nd=$(dirname "$(readlink -f "$0")")\nLD_LIBRARY_PATH="$d/../../../lib" exec "$d/real/%s" "$@"\n' $t > $B/usr/lib/cvise/$t
  chmod +x $B/usr/lib/cvise/$t
done
cat > $B/bin/cvise <<'EOS'
#!/bin/sh
# C-Vise 2.7.0 from Debian 12, carried with its libraries
d=$(dirname "$(readlink -f "$0")")/..
DESTDIR="$d" PYTHONPATH="$d/py:$d/usr/share" PATH="$d/bin:$PATH" exec python3 "$d/bin/cvise_main" "$@"
EOS
chmod +x $B/bin/cvise
cp -r /usr/lib/python3/dist-packages/pebble /usr/lib/python3/dist-packages/chardet $B/py/
ls .whl/psutil-*abi3*.whl >/dev/null 2>&1 || python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl psutil==5.9.8
(cd $B/py && unzip -q -o "$OLDPWD"/.whl/psutil-*abi3*.whl)
$B/bin/cvise --version
mkdir -p .device && tar -C $W -cf - cvise | xz -9 -T0 > .device/cvise.txz
rm -rf $W
ls -la .device/cvise.txz
