cd bench/probes/s18_grid_constant
for f in s18a s18a_gc s17d s17d_nogc; do echo "== $f on the GPU"; CUDA_VISIBLE_DEVICES=0 wsoracle $f.cu --timeout 10 2>&1 | grep -E "^(verdict|signature|evidence|timings)" ; done
echo "== s18a on the GPU under compute-sanitizer memcheck"
CUDA_VISIBLE_DEVICES=0 wsoracle s18a.cu --timeout 60 --sanitizer memcheck 2>&1 | head -60
