__device__ float rowsum(const float *, int );
__global__ void roles_kernel(float *x, float *y, int cols) {
  ;
  ;
  rowsum(x + cols, cols);
  for (int c ; cols; 32)
    x[c] ;
}
