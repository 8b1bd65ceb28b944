// A sample program's file helpers, as vendor samples keep theirs beside
// the program (our own, for tests/kernels/byok/program.asc).
#pragma once

#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>

inline bool SaveBytes(const std::string& path, const void* data, size_t size)
{
    std::ofstream file(path, std::ios::binary);
    if (!file) {
        std::cerr << "cannot write " << path << "\n";
        return false;
    }
    file.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    return static_cast<bool>(file);
}
