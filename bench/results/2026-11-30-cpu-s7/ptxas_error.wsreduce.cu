__global__ void roles_kernel() { asm("tcgen05.fence::before_thread_sync;\n"); }
