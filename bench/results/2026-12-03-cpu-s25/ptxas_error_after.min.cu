__global__ void roles_kernel() {
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
}
