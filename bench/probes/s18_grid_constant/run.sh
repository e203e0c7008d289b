# Session 18 (bench/results/2026-12-02-h200-session18/): is `__grid_constant__` what turned the K-loop
# reduction's GPU verdict? s18a.cu is call a's result (no __grid_constant__ on its three tensor
# maps), s17d.cu session 17 d's (with it); each is judged on the GPU as it is and with the
# attribute put back / taken off, then s18a under compute-sanitizer memcheck.
# Run on the GPU machine: bash scripts/device-run.sh bench/probes/s18_grid_constant/run.sh
cd "$(dirname "$0")"
sed 's/const CUtensorMap tmap_a, CUtensorMap tmap_b,/const __grid_constant__ CUtensorMap tmap_a, const __grid_constant__ CUtensorMap tmap_b,/; s/const CUtensorMap tmap_c)/const __grid_constant__ CUtensorMap tmap_c)/' s18a.cu > /tmp/s18a_gc.cu
sed 's/const __grid_constant__ CUtensorMap/const CUtensorMap/g' s17d.cu > /tmp/s17d_nogc.cu
cp s18a.cu s17d.cu /tmp/
for f in s18a s18a_gc s17d s17d_nogc; do echo "== $f on the GPU"; CUDA_VISIBLE_DEVICES=0 wsoracle /tmp/$f.cu --timeout 10 2>&1 | grep -E "^(verdict|signature|evidence|timings)" ; done
echo "== s18a on the GPU under compute-sanitizer memcheck"
CUDA_VISIBLE_DEVICES=0 wsoracle /tmp/s18a.cu --timeout 60 --sanitizer memcheck 2>&1 | head -60
