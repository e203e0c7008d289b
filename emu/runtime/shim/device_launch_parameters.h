// forwards to the emulator's CUDA shim (emu/runtime/cuda_shim.h)
#pragma once
#include "emu/runtime/cuda_shim.h"
