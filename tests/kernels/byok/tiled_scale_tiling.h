// The tiling data of tiled_scale.cpp, in a header of its own as vendor
// samples keep it: filled in by the launch, passed to the entry by value.
#pragma once
#include <cstdint>

struct ScaleTilingData {
    uint32_t totalLength; // elements of x and y
    uint16_t tileLength;  // elements per tile, a multiple of 8
    float scale;
    int16_t bias;
};
