// forwards to the emulator's CUDA shim (emu/cuda_shim.h)
#pragma once
#include "emu/cuda_shim.h"
