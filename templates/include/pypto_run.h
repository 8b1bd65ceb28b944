// The launches of a vendor program run by `pypto-build run`: each
// `kernel<<<blocks, l2ctrl, stream>>>(args…)` of the program is compiled as
// `pypto_run::launch<CORES>("kernel", "params", &kernel, blocks, l2ctrl,
// stream)(args…)`, which runs the kernel's blocks one after another on the
// emulation with every sanitizer check on. Each pointer argument is bounded
// by the ACL allocation it points into (acl/acl.h keeps them); a failure is
// printed, kept for aclrtSynchronizeStream to return (as a kernel fault is
// on the NPU), and recorded in the file $PYPTO_RUN_FAILURES names so that
// `pypto-build run` fails even when the program does not check.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "acl/acl.h"
#include "kernel_operator.h"

namespace pypto_run {

// Which cores a kernel runs on: as its declaration says (`__cube__`,
// `__mix__`, or a vector kernel otherwise).
enum class Cores { Vector, Cube, Mixed };

inline void record_failure(const std::string& message)
{
    std::fprintf(stderr, "pypto-build run: %s\n", message.c_str());
    pypto_acl::fail(message);
    if (const char* path = std::getenv("PYPTO_RUN_FAILURES")) {
        if (FILE* f = std::fopen(path, "a")) {
            std::fprintf(f, "%s\n", message.c_str());
            std::fclose(f);
        }
    }
}

template <Cores C, typename F>
struct Launch {
    const char* name;
    const char* params; // the entry's parameter names, comma-separated
    F* entry;
    uint32_t blocks;

    // The name of parameter `i`, for the emulation's messages.
    std::string param_name(size_t i) const
    {
        std::string all = params;
        size_t start = 0;
        for (size_t k = 0; k < i; ++k) {
            size_t comma = all.find(',', start);
            if (comma == std::string::npos) {
                return "argument " + std::to_string(i);
            }
            start = comma + 1;
        }
        std::string name = all.substr(start, all.find(',', start) - start);
        return name.empty() ? "argument " + std::to_string(i) : name;
    }

    template <typename... A>
    void operator()(A... args) const
    {
        std::vector<void*> bases;
        std::vector<uint64_t> bytes;
        std::vector<std::string> names;
        size_t index = 0;
        auto note = [&](const auto& arg) {
            using T = std::decay_t<decltype(arg)>;
            if constexpr (std::is_pointer<T>::value) {
                auto found = pypto_acl::find(reinterpret_cast<const void*>(arg));
                bool known = false;
                for (void* b : bases) {
                    known = known || b == found.first;
                }
                if (found.first != nullptr && !known) {
                    bases.push_back(found.first);
                    bytes.push_back(found.second);
                    names.push_back(param_name(index));
                }
            }
            ++index;
        };
        (note(args), ...);
        std::vector<pypto_emu::HostArg> info;
        for (const std::string& n : names) {
            info.push_back({0, 0, n.data(), n.size(), 1, 0});
        }
        uint64_t tiling = 0;
        char message[1024] = {0};
        std::string kernel = name;
        pypto_emu::HostLaunch record{};
        record.block_num = blocks;
        record.args = bases.data();
        record.arg_bytes = bytes.data();
        record.num_args = static_cast<uint32_t>(bases.size());
        record.tiling = reinterpret_cast<const uint8_t*>(&tiling);
        record.tiling_bytes = sizeof tiling;
        record.err = message;
        record.err_len = sizeof message;
        record.arg_info = info.data();
        record.kernel = kernel.data();
        record.kernel_len = kernel.size();
        static uint64_t launches = 0;
        record.launch_id = ++launches;
        record.sanitize = pypto_emu::SANITIZE_RACE | pypto_emu::SANITIZE_INIT |
                          pypto_emu::SANITIZE_SYNC | pypto_emu::SANITIZE_MEM;
        if (blocks == 0) {
            record_failure("kernel `" + kernel + "`: launched with 0 blocks");
            return;
        }
        for (uint32_t b = 0; b < blocks; ++b) {
            record.block_idx = b;
            auto body = [&] { entry(args...); };
            int32_t status = 0;
            if constexpr (C == Cores::Cube) {
                status = pypto_emu::run_cube_block(&record, body);
            } else if constexpr (C == Cores::Mixed) {
                status = pypto_emu::run_mixed_block(&record, body);
            } else {
                status = pypto_emu::run_block(&record, body);
            }
            if (status != 0) {
                uint32_t block = record.fail_block != 0 ? record.fail_block - 1 : b;
                record_failure("kernel `" + kernel + "`, block " + std::to_string(block) + ": " +
                               message);
                return;
            }
        }
    }
};

template <Cores C, typename F>
Launch<C, F> launch(const char* name, const char* params, F* entry, uint32_t blocks, void*, void*)
{
    return Launch<C, F>{name, params, entry, blocks};
}

} // namespace pypto_run
