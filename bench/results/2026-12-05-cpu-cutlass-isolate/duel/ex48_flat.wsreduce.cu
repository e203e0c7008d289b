__global__ void k() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" : : "n"(232)); }
