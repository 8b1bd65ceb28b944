// Memories, tensors and the buffer manager: TPosition, GlobalTensor,
// LocalTensor (int4b_t ones too), TPipe, TQue, TQueBind (in-place queues of
// depth 0), TBuf, TBufPool. Enforced: capacity per memory,
// 32-byte placement of Unified Buffer tensors, buffer-count limits, queue
// misuse (AllocTensor with no free buffer, EnQue into a full queue, DeQue of
// an empty queue, FreeTensor twice), and bounds of every element access.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <string>
#include <memory>

#include "core.h"
#include "memories.h"
#include "model/cost.h"
#include "access.h"
#include "sanitize/init.h"
#include "sanitize/mem.h"
#include "sanitize/race.h"
#include "types.h"

namespace AscendC {


// L2 cache hints for a GlobalTensor (SetL2CacheHint); the host has no L2
// to steer, so they are accepted and ignored.
enum class CacheMode : uint8_t {
    CACHE_MODE_DISABLE = 0,
    CACHE_MODE_NORMAL = 1,
    CACHE_MODE_PERSISTENT = 4,
};
enum CacheRwMode { READ = 1, WRITE = 2, RW = 3 };

} // namespace AscendC

namespace pypto_emu {

// The block's on-chip memories: one arena per memory and host thread,
// shared by TPipe buffers and static tensors (LocalTensor(pos, addr, n),
// LocalMemAllocator), as the hardware has one UB per core. Contents carry
// over from block to block like the hardware's (undefined to a kernel).
inline uint8_t* arena(Memory mem)
{
    thread_local std::unique_ptr<uint8_t[]> arenas[static_cast<int>(Memory::COUNT)];
    auto& a = arenas[static_cast<int>(mem)];
    if (!a) {
        a.reset(new uint8_t[memory_spec(mem).capacity + 512]);
    }
    // Align the start to the strictest alignment any memory needs.
    auto addr = reinterpret_cast<uintptr_t>(a.get());
    return a.get() + ((512 - addr % 512) % 512);
}

// One buffer of a queue, and where its tensor is in the queue protocol.
struct Slot {
    enum class State { Free, Allocated, Queued, Dequeued };
    uint8_t* data = nullptr;
    uint32_t bytes = 0;
    State state = State::Free;
    int32_t tag = 0;                      // SetUserTag travels with the buffer through the queue
    AscendC::TPosition user_src = TPosition::MAX; // EnQue<src, dst>: the pair it was queued with
    AscendC::TPosition user_dst = TPosition::MAX;
    // racecheck: the producer pipe's clock at EnQue, the consumer's at FreeTensor.
    uint32_t race_filled[pipe_slots] = {};
    uint32_t race_freed[pipe_slots] = {};
    bool race_was_freed = false;
    // The modelled NPU: when the producer filled it (EnQue), when the consumer freed it.
    double model_filled = 0;
    double model_freed = 0;
    bool model_was_freed = false;
};

// A queue's enqueued buffers, oldest first, as indices into its buffers:
// a buffer is in it at most once and a queue has at most 255 buffers (an
// `InitBuffer` count is a uint8_t), so a fixed ring holds them, and a queue
// allocates nothing for its order.
class SlotFifo {
public:
    bool empty() const { return count_ == 0; }
    size_t size() const { return count_; }
    void clear() { head_ = 0, count_ = 0; }
    void push_back(uint8_t slot) { ring_[static_cast<uint8_t>(head_ + count_)] = slot, ++count_; }
    uint8_t front() const { return ring_[head_]; }
    void pop_front() { head_ = static_cast<uint8_t>(head_ + 1), --count_; }

private:
    uint8_t ring_[256] = {};
    uint8_t head_ = 0;
    uint16_t count_ = 0;
};

// Counts TPipe lifetimes, resets and destroys in this thread: a queue, TBuf
// or TBufPool set up under an earlier value has lost its memory.
inline uint64_t& pipe_epoch()
{
    thread_local uint64_t epoch = 1;
    return epoch;
}

// Largest number of dimensions in a ShapeInfo (the documentation names the
// constant K_MAX_DIM without its value; 8 is the emulation's choice).
constexpr uint32_t max_dim = 8;

template <typename>
constexpr bool dependent_false = false;

} // namespace pypto_emu

namespace AscendC {

using TTagType = int32_t;

// A queue's compile-time configuration (TQue's `mask` argument as a
// pointer); accepted, the fields are not used by the emulation.
struct TQueConfig {
    bool nd2nz = false;
    bool nz2nd = false;
    bool scmBlockGroup = false;
    uint32_t bufferLen = 0;
    uint32_t bufferNumber = 0;
    uint32_t consumerSize = 0;
    TPosition consumer[8] = {};
    bool enableStaticEvtId = false;
    bool enableLoopQueue = false;
};

constexpr uint32_t K_MAX_DIM = pypto_emu::max_dim;

enum class DataFormat : uint8_t { ND = 0, NZ, NCHW, NC1HWC0, NHWC };

// The shape of a tensor, as set by SetShapeInfo: the current shape and the
// original one (the same unless given), and the data format.
struct ShapeInfo {
    ShapeInfo() {}
    ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[], const uint8_t inputOriginalShapeDim,
              const uint32_t inputOriginalShape[], const DataFormat inputFormat)
        : shapeDim(inputShapeDim), originalShapeDim(inputOriginalShapeDim), dataFormat(inputFormat)
    {
        check(inputShapeDim, "shape");
        check(inputOriginalShapeDim, "original shape");
        for (uint32_t i = 0; i < inputShapeDim; ++i) {
            shape[i] = inputShape[i];
        }
        for (uint32_t i = 0; i < inputOriginalShapeDim; ++i) {
            originalShape[i] = inputOriginalShape[i];
        }
    }
    ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[], const DataFormat inputFormat)
        : ShapeInfo(inputShapeDim, inputShape, inputShapeDim, inputShape, inputFormat)
    {
    }
    ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[])
        : ShapeInfo(inputShapeDim, inputShape, inputShapeDim, inputShape, DataFormat::ND)
    {
    }

    uint8_t shapeDim = 0;
    uint8_t originalShapeDim = 0;
    uint32_t shape[K_MAX_DIM] = {};
    uint32_t originalShape[K_MAX_DIM] = {};
    DataFormat dataFormat = DataFormat::ND;

private:
    static void check(uint8_t dim, const char* which)
    {
        if (dim > K_MAX_DIM) {
            pypto_emu::fail("ShapeInfo: a ", which, " of ", static_cast<int>(dim), " dimensions; at most ",
                            K_MAX_DIM, " are supported");
        }
    }
};

// The product of the current shape's dimensions.
inline int GetShapeSize(const ShapeInfo& shapeInfo)
{
    int n = 1;
    for (uint32_t i = 0; i < shapeInfo.shapeDim && i < K_MAX_DIM; ++i) {
        n *= static_cast<int>(shapeInfo.shape[i]);
    }
    return n;
}

} // namespace AscendC

namespace pypto_emu {

// Shape information a tensor carries once SetShapeInfo has been called.
struct ShapeSlot {
    AscendC::ShapeInfo info;
    bool set = false;

    AscendC::ShapeInfo get(const char* what) const
    {
        if (!set) {
            fail(what, ": the tensor has no shape information; SetShapeInfo first (a shape has no default)");
        }
        return info;
    }
};

} // namespace pypto_emu

namespace AscendC {

template <typename T>
class GlobalTensor {
public:
    using PrimType = T;

    // No L2 cache on the host: the hint changes nothing.
    template <CacheRwMode rwMode = CacheRwMode::RW>
    void SetL2CacheHint(CacheMode mode)
    {
        (void)mode;
    }

    GlobalTensor() = default;

    // `bufferSize` elements (for int4b_t, two a byte) at `buffer`.
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize)
    {
        pypto_emu::check_gm(buffer, pypto_emu::bytes_for<T>(bufferSize), "GlobalTensor::SetGlobalBuffer");
        data_ = buffer;
        size_ = bufferSize;
        launch_ = pypto_emu::block.launch_id;
    }

    // Size unknown: GetSize() is 0 and accesses are checked only against
    // the launch's tensors.
    void SetGlobalBuffer(__gm__ T* buffer)
    {
        data_ = buffer;
        size_ = 0;
        launch_ = pypto_emu::block.launch_id;
    }

    T GetValue(uint64_t offset) const
    {
        check(offset, 1, "GlobalTensor::GetValue", false);
        note_read(offset, 1);
        return load(offset);
    }

    void SetValue(uint64_t offset, T value) const
    {
        check(offset, 1, "GlobalTensor::SetValue", true);
        store(offset, value);
        note_write(offset);
    }

    // The record's global-memory read; memcheck: the bytes of elements
    // [offset, offset + count), read by this block.
    void note_read(uint64_t offset, uint64_t count) const
    {
        pypto_emu::instr_access(pypto_emu::Memory::GM, false);
        if (pypto_emu::sanitizing(pypto_emu::SANITIZE_MEM) && count != 0) {
            uint64_t first = offset * pypto_emu::bits_of<T> / 8;
            pypto_emu::note_gm_read(reinterpret_cast<const uint8_t*>(data_) + first,
                                    pypto_emu::bytes_for<T>(offset + count) - first);
        }
    }

    // The record's global-memory write; memcheck: the bytes of element
    // `offset`, written by this block.
    void note_write(uint64_t offset) const
    {
        pypto_emu::instr_access(pypto_emu::Memory::GM, true);
        uint64_t first = offset * pypto_emu::bits_of<T> / 8;
        pypto_emu::note_gm_write(reinterpret_cast<uint8_t*>(data_) + first,
                                 pypto_emu::bytes_for<T>(offset + 1) - first);
    }

    // One element through operator(): reading it is a read, assigning to
    // it a write, so that a write to an input is caught like SetValue's.
    class Element {
    public:
        operator T() const
        {
            owner_->check(offset_, 1, "GlobalTensor::operator()", false);
            owner_->note_read(offset_, 1);
            return owner_->load(offset_);
        }
        const Element& operator=(T value) const
        {
            owner_->check(offset_, 1, "GlobalTensor::operator()", true);
            owner_->store(offset_, value);
            owner_->note_write(offset_);
            return *this;
        }
        const Element& operator=(const Element& other) const { return *this = static_cast<T>(other); }
        const Element& operator+=(T v) const { return *this = static_cast<T>(static_cast<T>(*this) + v); }
        const Element& operator-=(T v) const { return *this = static_cast<T>(static_cast<T>(*this) - v); }
        const Element& operator*=(T v) const { return *this = static_cast<T>(static_cast<T>(*this) * v); }
        const Element& operator/=(T v) const { return *this = static_cast<T>(static_cast<T>(*this) / v); }

    private:
        friend class GlobalTensor;
        Element(const GlobalTensor* owner, uint64_t offset) : owner_(owner), offset_(offset) {}
        const GlobalTensor* owner_;
        uint64_t offset_;
    };

    Element operator()(uint64_t offset) const { return Element(this, offset); }

    GlobalTensor operator[](uint64_t offset) const
    {
        if (size_ != 0 && offset > size_) {
            pypto_emu::fail("GlobalTensor::operator[]: offset ", offset,
                            " is past the tensor's ", size_, " elements");
        }
        check_whole_byte(offset, "GlobalTensor::operator[]");
        GlobalTensor view = *this;
        view.data_ = at(offset);
        view.size_ = size_ != 0 ? size_ - offset : 0;
        return view;
    }

    uint64_t GetSize() const { return size_; }
    const __gm__ T* GetPhyAddr() const { return data_; }
    __gm__ T* GetPhyAddr(uint64_t offset) const
    {
        check_whole_byte(offset, "GlobalTensor::GetPhyAddr");
        return at(offset);
    }

    void SetShapeInfo(const ShapeInfo& shapeInfo)
    {
        shape_.info = shapeInfo;
        shape_.set = true;
    }
    ShapeInfo GetShapeInfo() const { return shape_.get("GlobalTensor::GetShapeInfo"); }

    // Documented for the Ascend 950 only; Atlas A2/A3 kernels SetGlobalBuffer
    // a GlobalTensor of the other type instead.
    template <typename CAST_T>
    GlobalTensor<CAST_T> ReinterpretCast() const
    {
        if constexpr (pypto_emu::Target::reinterpret_cast_gm) {
            GlobalTensor<CAST_T> other;
            other.data_ = reinterpret_cast<CAST_T*>(data_);
            other.size_ = size_ * pypto_emu::bits_of<T> / pypto_emu::bits_of<CAST_T>;
            other.launch_ = launch_;
            return other;
        } else {
            static_assert(pypto_emu::dependent_false<CAST_T>,
                          "GlobalTensor::ReinterpretCast is not supported on " PYPTO_ARCH(TARGET_NAME)
                          " (documented for Ascend 950 only); call SetGlobalBuffer on a GlobalTensor of the "
                          "new type with GetPhyAddr() instead");
            return {};
        }
    }

    // For the emulation's copies: checks [offset, offset + count) and
    // returns its address; `range` for reading, `range_out` for writing.
    const T* range(uint64_t offset, uint64_t count, const char* what) const
    {
        check(offset, count, what, false);
        note_read(offset, count);
        stream_after<false>(offset, count);
        return data_ + offset;
    }

    T* range_out(uint64_t offset, uint64_t count, const char* what) const
    {
        check(offset, count, what, true);
        stream_after<true>(offset, count);
        return data_ + offset;
    }

private:
    template <typename U>
    friend class GlobalTensor;

    // Asks the host's caches for the bytes after a copy's range, as many as
    // it moves (at most 2 KiB) and within the tensor: copies through a
    // tensor mostly go on where the last one ended. The host prefetches
    // within a 4 KiB page only, so a copy of a page-long row would otherwise
    // wait for the next row cold; with this, the emulation's copies overlap
    // memory traffic as a fused loop's accesses do. A prefetch never faults
    // and changes no value.
    template <bool Write>
    void stream_after(uint64_t offset, uint64_t count) const
    {
        uint64_t end = offset + count;
        if (size_ <= end) {
            return;
        }
        uint64_t bits = pypto_emu::bits_of<T>;
        uint64_t ahead = std::min<uint64_t>({count * bits / 8, (size_ - end) * bits / 8, 2048});
        const char* next = reinterpret_cast<const char*>(data_) + end * bits / 8;
        for (uint64_t b = 0; b < ahead; b += 64) {
            __builtin_prefetch(next + b, Write ? 1 : 0, 3);
        }
    }

    T* at(uint64_t offset) const
    {
        return reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(data_) + offset * pypto_emu::bits_of<T> / 8);
    }

    T load(uint64_t offset) const
    {
        if constexpr (pypto_emu::is_int4<T>) {
            return pypto_emu::load_int4(data_, offset);
        } else {
            return data_[offset];
        }
    }

    void store(uint64_t offset, T value) const
    {
        if constexpr (pypto_emu::is_int4<T>) {
            pypto_emu::store_int4(data_, offset, value);
        } else {
            data_[offset] = value;
        }
    }

    // An int4b_t view or address must start on a byte.
    void check_whole_byte(uint64_t offset, const char* what) const
    {
        if constexpr (pypto_emu::is_int4<T>) {
            if (offset % 2 != 0) {
                pypto_emu::fail(what, ": offset ", offset, " of an int4b_t tensor is odd; two int4b_t share "
                                "a byte, so an offset must be even");
            }
        } else {
            (void)offset;
            (void)what;
        }
    }

    void check(uint64_t offset, uint64_t count, const char* what, bool write) const
    {
        if (data_ == nullptr) {
            pypto_emu::fail(what, ": the GlobalTensor has no buffer; call SetGlobalBuffer first");
        }
        if (launch_ != pypto_emu::block.launch_id) {
            pypto_emu::fail(what, ": the GlobalTensor was set up by an earlier launch, whose "
                            "memory is gone; call SetGlobalBuffer in every launch");
        }
        if (size_ != 0 && offset + count > size_) {
            pypto_emu::fail(what, ": elements [", offset, ", ", offset + count,
                            ") are outside the GlobalTensor's ", size_, " elements");
        }
        uint64_t first = offset * pypto_emu::bits_of<T> / 8;
        uint64_t end = pypto_emu::bytes_for<T>(offset + count);
        pypto_emu::check_gm(reinterpret_cast<uint8_t*>(data_) + first, end - first, what, write);
    }

    T* data_ = nullptr;
    uint64_t size_ = 0;
    uint64_t launch_ = 0; // the launch whose memory data_ points into
    pypto_emu::ShapeSlot shape_;
};

template <typename T>
class LocalTensor {
public:
    using PrimType = T;
    // operator() yields a reference; for int4b_t a proxy for the nibble.
    using Ref = std::conditional_t<pypto_emu::is_int4<T>, pypto_emu::Int4Ref, T&>;

    LocalTensor() = default;

    // Static tensor programming: `tileSize` elements at byte `addr` of the
    // memory `pos` lies in, with no TPipe. The address must be 32-byte
    // aligned and the tensor inside the memory's physical capacity.
    LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize)
    {
        pypto_emu::Memory mem = pypto_emu::memory_of(pos);
        const char* name = pypto_emu::position_name(pos);
        if (mem == pypto_emu::Memory::GM) {
            pypto_emu::fail("LocalTensor(", name, ", ", addr, ", ", tileSize,
                            "): the position is in global memory, not on chip");
        }
        const auto& spec = pypto_emu::memory_spec(mem);
        if (addr % 32 != 0) {
            pypto_emu::fail("LocalTensor(", name, ", ", addr, ", ", tileSize, "): address ", addr,
                            " of the ", spec.name, " is not 32-byte aligned");
        }
        uint64_t end = addr + pypto_emu::bytes_for<T>(tileSize);
        if (end > spec.capacity) {
            pypto_emu::fail("LocalTensor(", name, ", ", addr, ", ", tileSize, "): ", tileSize,
                            " elements of ", pypto_emu::bits_of<T>, " bits at address ", addr, " end at byte ",
                            end, ", past the ", spec.capacity, " bytes of the ", spec.name);
        }
        if (mem == pypto_emu::Memory::UB && end > pypto_emu::block.ub_peak) {
            pypto_emu::block.ub_peak = end;
        }
        data_ = reinterpret_cast<T*>(pypto_emu::arena(mem) + addr);
        size_ = tileSize;
        offset_bytes_ = addr;
        position_ = pos;
    }

    // The tensor from element `offset` on; for int4b_t the offset must be
    // even (a view starts on a byte).
    LocalTensor operator[](uint32_t offset) const
    {
        if (offset > size_) {
            pypto_emu::fail("LocalTensor::operator[]: offset ", offset, " is past the tensor's ",
                            size_, " elements");
        }
        if constexpr (pypto_emu::is_int4<T>) {
            if (offset % 2 != 0) {
                pypto_emu::fail("LocalTensor::operator[]: offset ", offset, " of an int4b_t tensor is odd; two "
                                "int4b_t share a byte, so an offset must be even");
            }
        }
        LocalTensor view = *this;
        uint32_t bytes = static_cast<uint32_t>(offset * pypto_emu::bits_of<T> / 8);
        view.data_ = reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(data_) + bytes);
        view.offset_bytes_ = offset_bytes_ + bytes;
        view.size_ = size_ - offset;
        view.slot_ = nullptr;
        return view;
    }

    T GetValue(uint32_t index) const
    {
        check_index(index, "LocalTensor::GetValue");
        access_elem(index, "LocalTensor::GetValue");
        if constexpr (pypto_emu::is_int4<T>) {
            return pypto_emu::load_int4(data_, index);
        } else {
            return data_[index];
        }
    }

    template <typename V>
    void SetValue(uint32_t index, V value) const
    {
        check_index(index, "LocalTensor::SetValue");
        access_elem(index, nullptr);
        if constexpr (pypto_emu::is_int4<T>) {
            pypto_emu::store_int4(data_, index, static_cast<int4b_t>(value));
        } else {
            data_[index] = static_cast<T>(value);
        }
    }

    Ref operator()(uint32_t index) const
    {
        check_index(index, "LocalTensor::operator()");
        access_elem(index, nullptr); // a reference: counted as a write, never checked
        if constexpr (pypto_emu::is_int4<T>) {
            return pypto_emu::Int4Ref(data_, index);
        } else {
            return data_[index];
        }
    }

    // Elements (for int4b_t, 4-bit elements).
    uint32_t GetSize() const { return size_; }
    // Changes the element count; the tensor must stay inside its memory.
    void SetSize(const uint32_t size) { resize(size, "LocalTensor::SetSize"); }
    // The documentation gives the length in elements (its example says
    // bytes); the emulation follows the parameter table: elements.
    void SetBufferLen(uint32_t dataLen) { resize(dataLen, "LocalTensor::SetBufferLen"); }
    // Bytes the elements occupy (an odd int4b_t count rounds up).
    uint32_t GetLength() const { return static_cast<uint32_t>(pypto_emu::bytes_for<T>(size_)); }
    // As on the NPU: the tensor's byte address within its memory.
    uint64_t GetPhyAddr() const { return offset_bytes_; }
    uint64_t GetPhyAddr(const uint32_t offset) const
    {
        return offset_bytes_ + static_cast<uint64_t>(offset) * pypto_emu::bits_of<T> / 8;
    }
    int32_t GetPosition() const { return static_cast<int32_t>(position_); }

    void SetUserTag(const TTagType tag) { tag_ = tag; }
    TTagType GetUserTag() const { return tag_; }

    void SetShapeInfo(const ShapeInfo& shapeInfo)
    {
        shape_.info = shapeInfo;
        shape_.set = true;
    }
    ShapeInfo GetShapeInfo() const { return shape_.get("LocalTensor::GetShapeInfo"); }

    // The same bytes as elements of CAST_T: the size in bytes (bits, for
    // int4b_t) is kept, an incomplete last element dropped.
    template <typename CAST_T>
    LocalTensor<CAST_T> ReinterpretCast() const
    {
        LocalTensor<CAST_T> other;
        other.data_ = reinterpret_cast<CAST_T*>(data_);
        other.size_ = static_cast<uint32_t>(size_ * pypto_emu::bits_of<T> / pypto_emu::bits_of<CAST_T>);
        other.offset_bytes_ = offset_bytes_;
        other.position_ = position_;
        other.slot_ = nullptr;
        other.tag_ = tag_;
        return other;
    }

    // This tensor becomes `src` from its element `offset` on (an offset in
    // elements of src), with the rest of src's bytes.
    template <typename S>
    void SetAddrWithOffset(LocalTensor<S>& src, uint32_t offset)
    {
        if (offset > src.size_) {
            pypto_emu::fail("LocalTensor::SetAddrWithOffset: offset ", offset, " is past the source tensor's ",
                            src.size_, " elements");
        }
        uint64_t skip = static_cast<uint64_t>(offset) * pypto_emu::bits_of<S> / 8;
        data_ = reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(src.data_) + skip);
        offset_bytes_ = static_cast<uint32_t>(src.offset_bytes_ + skip);
        size_ = static_cast<uint32_t>((src.size_ - offset) * pypto_emu::bits_of<S> / pypto_emu::bits_of<T>);
        position_ = src.position_;
        slot_ = nullptr;
    }

    // CPU debugging aids: the elements, one 32-byte block a line, to stderr;
    // the raw bytes to a file (0 on success).
    void Print() { Print(size_); }
    void Print(uint32_t len)
    {
        if (len > size_) {
            len = size_;
        }
        std::ostringstream out;
        uint32_t per_line = static_cast<uint32_t>(256 / pypto_emu::bits_of<T>);
        for (uint32_t i = 0; i < len; ++i) {
            if (i % per_line == 0) {
                out << (i == 0 ? "" : "\n") << std::setw(4) << std::setfill('0') << i << ":";
            }
            out << ' ';
            if constexpr (pypto_emu::is_int4<T> || std::is_integral_v<T>) {
                out << static_cast<int64_t>(GetValue(i));
            } else {
                out << static_cast<double>(static_cast<float>(GetValue(i)));
            }
        }
        out << '\n';
        std::string text = out.str();
        std::fwrite(text.data(), 1, text.size(), stderr);
    }
    int32_t ToFile(const std::string& fileName) const
    {
        std::FILE* f = std::fopen(fileName.c_str(), "wb");
        if (f == nullptr) {
            return -1;
        }
        size_t n = static_cast<size_t>(GetLength());
        size_t written = data_ == nullptr ? 0 : std::fwrite(data_, 1, n, f);
        return std::fclose(f) == 0 && written == n ? 0 : -1;
    }

    // ---- emulation internals ----------------------------------------------
    static LocalTensor make(uint8_t* data, uint32_t bytes, uint32_t offset_bytes, TPosition pos,
                            pypto_emu::Slot* slot)
    {
        LocalTensor t;
        t.data_ = reinterpret_cast<T*>(data);
        t.size_ = static_cast<uint32_t>(pypto_emu::elems_in<T>(bytes));
        t.offset_bytes_ = offset_bytes;
        t.position_ = pos;
        t.slot_ = slot;
        return t;
    }
    uint32_t offset_bytes() const { return offset_bytes_; }
    TPosition position() const { return position_; }
    pypto_emu::Slot* slot() const { return slot_; }
    T* data() const { return data_; }
    void set_tag(TTagType tag) { tag_ = tag; }

private:
    template <typename U>
    friend class LocalTensor;

    void resize(uint32_t size, const char* what)
    {
        pypto_emu::Memory mem = pypto_emu::memory_of(position_);
        if (data_ != nullptr && mem != pypto_emu::Memory::GM) {
            const auto& spec = pypto_emu::memory_spec(mem);
            uint64_t end = offset_bytes_ + pypto_emu::bytes_for<T>(size);
            if (end > spec.capacity) {
                pypto_emu::fail(what, ": ", size, " elements from byte ", offset_bytes_, " end at byte ", end,
                                ", past the ", spec.capacity, " bytes of the ", spec.name);
            }
        }
        size_ = size;
    }

    // initcheck for element `index`: a read of it when `read` names the
    // instruction, else a write.
    void access_elem(uint32_t index, const char* read) const
    {
        if (!pypto_emu::watching_local()) {
            return;
        }
        pypto_emu::Memory mem = pypto_emu::memory_of(position_);
        if (mem == pypto_emu::Memory::GM) {
            return;
        }
        pypto_emu::OnPipe scalar(PIPE_S); // element access is the scalar unit's
        uint64_t base = static_cast<uint64_t>(reinterpret_cast<uint8_t*>(data_) - pypto_emu::arena(mem));
        uint64_t off = static_cast<uint64_t>(index) * pypto_emu::bits_of<T> / 8;
        uint64_t n = (pypto_emu::bits_of<T> + 7) / 8;
        if (read != nullptr) {
            pypto_emu::access_read_at(read, "the tensor", position_, mem, base, off, n);
        } else {
            pypto_emu::access_write_at(mem, base + off, n);
        }
    }

    void check_index(uint32_t index, const char* what) const
    {
        pypto_emu::poll(what);
        if (pypto_emu::memory_of(position_) != pypto_emu::Memory::GM) {
            pypto_emu::model_scalar_access();
        }
        if (data_ == nullptr) {
            pypto_emu::fail(what, ": the LocalTensor was never allocated");
        }
        if (index >= size_) {
            pypto_emu::fail(what, ": index ", index, " is outside the tensor's ", size_,
                            " elements");
        }
    }

    T* data_ = nullptr;
    uint32_t size_ = 0;
    uint32_t offset_bytes_ = 0; // from the start of its memory, for alignment checks
    TPosition position_ = TPosition::GM;
    pypto_emu::Slot* slot_ = nullptr;
    TTagType tag_ = 0;
    pypto_emu::ShapeSlot shape_;
};

} // namespace AscendC

namespace pypto_emu {

// initcheck on a local tensor: where it lies, and its byte ranges.
struct AccessView {
    TPosition pos = TPosition::GM;
    Memory mem = Memory::GM; // GM: nothing to check (or the check is off)
    uint64_t base = 0;       // byte of the memory the tensor starts at
    const char* what = "";
    const char* operand = "";

    void write(uint64_t off, uint64_t n) const
    {
        if (mem != Memory::GM) {
            access_write_at(mem, base + off, n, what[0] != '\0' ? what : nullptr);
        }
    }
    void read(uint64_t off, uint64_t n) const
    {
        if (mem != Memory::GM) {
            access_read_at(what, operand, pos, mem, base, off, n);
        }
    }
};

template <typename T>
AccessView access_view(const AscendC::LocalTensor<T>& t, const char* what = "", const char* operand = "")
{
    AccessView v;
    if (!watching_local() || t.data() == nullptr) {
        return v;
    }
    Memory mem = memory_of(t.position());
    if (mem == Memory::GM) {
        return v;
    }
    v.pos = t.position();
    v.mem = mem;
    v.base = static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(t.data()) - arena(mem));
    v.what = what;
    v.operand = operand;
    return v;
}

// Bytes [off, off + n) of `t` are written / must have been written.
template <typename T>
void access_write(const AscendC::LocalTensor<T>& t, uint64_t off, uint64_t n)
{
    if (watching_local()) {
        access_view(t).write(off, n);
    }
}
template <typename T>
void access_read(const char* what, const char* operand, const AscendC::LocalTensor<T>& t, uint64_t off, uint64_t n)
{
    if (watching_local()) {
        access_view(t, what, operand).read(off, n);
    }
}

// One element of a move (LoadData) that copies whole fractals, rows nobody
// wrote included, as the hardware does: racecheck sees a read of the
// source and a write of the destination; initcheck carries each byte's
// written state across instead of checking it (the instruction that uses
// the data checks it).
struct AccessMove {
    Memory sm = Memory::GM, dm = Memory::GM;
    uint64_t sb = 0, db = 0; // tensor starts, bytes into their memories
    const char* what = "";
    bool race = false, init = false;

    void move(uint64_t s_off, uint64_t d_off, uint64_t n) const
    {
        if (race) {
            race_read(s_off, n);
            race_write(d_off, n);
        }
        if (init) {
            init_copy(s_off, d_off, n);
        }
    }
    // racecheck alone: a transposing move reads and writes whole
    // fractals, so it records them whole, not element by element (which
    // left the interval maps in two-byte pieces, and every later access
    // slow).
    void race_read(uint64_t s_off, uint64_t n) const { race_access(sm, sb + s_off, n, false, what); }
    void race_write(uint64_t d_off, uint64_t n) const { race_access(dm, db + d_off, n, true, what); }
    // initcheck alone: carries the written state of n bytes across.
    void init_copy(uint64_t s_off, uint64_t d_off, uint64_t n) const
    {
        if (sb + s_off + n <= sc && db + d_off + n <= dc) {
            dsh->dirty(db + d_off, db + d_off + n);
            std::memmove(ds + db + d_off, ss + sb + s_off, n);
        }
    }
    // init_copy of each 2-byte element of a 16 x 16 square at s_off to its
    // transposed place in the one at d_off ((r, c) to (c, r)), as
    // element-by-element calls would, in one pass when both squares lie
    // inside their memories.
    void init_copy_transposed16(uint64_t s_off, uint64_t d_off) const
    {
        if (sb + s_off + 512 > sc || db + d_off + 512 > dc) {
            for (uint32_t r = 0; r < 16; ++r) {
                for (uint32_t c = 0; c < 16; ++c) {
                    init_copy(s_off + (r * 16 + c) * 2, d_off + (c * 16 + r) * 2, 2);
                }
            }
            return;
        }
        dsh->dirty(db + d_off, db + d_off + 512);
        const uint8_t* from = ss + sb + s_off;
        uint8_t* to = ds + db + d_off;
        for (uint32_t r = 0; r < 16; ++r) {
            for (uint32_t c = 0; c < 16; ++c) {
                to[(c * 16 + r) * 2] = from[(r * 16 + c) * 2];
                to[(c * 16 + r) * 2 + 1] = from[(r * 16 + c) * 2 + 1];
            }
        }
    }
    // The two tensors as InitViews (for a AccessBatch of racecheck ranges).
    AccessView source_view() const { return AccessView{TPosition::GM, sm, sb, what, ""}; }
    AccessView destination_view() const { return AccessView{TPosition::GM, dm, db, what, ""}; }
    // With initcheck: both memories' shadows (this block's) and capacities,
    // looked up once per instruction rather than per element.
    uint8_t* ss = nullptr;
    uint8_t* ds = nullptr;
    InitShadow* dsh = nullptr;
    uint64_t sc = 0, dc = 0;
};

template <typename T, typename U>
AccessMove access_move(const char* what, const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<U>& dst)
{
    AccessMove m;
    if (!watching_local() || src.data() == nullptr || dst.data() == nullptr) {
        return m;
    }
    m.sm = memory_of(src.position());
    m.dm = memory_of(dst.position());
    if (m.sm == Memory::GM || m.dm == Memory::GM) {
        return m;
    }
    m.sb = static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(src.data()) - arena(m.sm));
    m.db = static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(dst.data()) - arena(m.dm));
    m.what = what;
    m.race = sanitizing(SANITIZE_RACE);
    m.init = sanitizing(SANITIZE_INIT);
    // The record: a move reads its source's memory and writes its
    // destination's (the ranges go to the sanitizers one by one below).
    instr_move(m.sm, m.dm);
    if (m.init) {
        m.ss = init_shadow(m.sm);
        m.dsh = &init_shadow_state(m.dm);
        m.ds = m.dsh->bytes.get();
        m.sc = memory_spec(m.sm).capacity;
        m.dc = memory_spec(m.dm).capacity;
    }
    return m;
}

// One instruction's racecheck and initcheck bookkeeping at once, for the
// instructions that touch many small ranges (the cube's fractal rows):
// the byte ranges of its operands, merged where one starts at the end of
// the one before. commit() first runs every check without changing
// anything: if racecheck finds no earlier access to report or to order,
// initcheck no unwritten byte read, and all accesses are on one pipe, it
// records them (racecheck's accesses, initcheck's written bytes) as the
// range-by-range calls would, and returns true. Otherwise it returns
// false having changed nothing, and the instruction runs its range-by-range
// bookkeeping, which reports exactly what it always did. Merging changes
// no check: each looks at every byte of every range either way.
struct AccessBatch {
    static constexpr int capacity = 96;
    struct Run {
        const AccessView* view;
        bool write;
        bool init; // initcheck applies (false: a move's ranges, racecheck only)
        uint64_t off, end;
    };
    Run runs[capacity];
    int count = 0;
    bool overflow = false; // too many ranges: commit() declines

    // `view` reads (write false) or writes bytes [off, off + n) of its tensor;
    // `init` false: racecheck only (AccessMove's ranges).
    void add(const AccessView& view, bool write, uint64_t off, uint64_t n, bool init = true)
    {
        if (view.mem == Memory::GM || n == 0) {
            return;
        }
        if (count > 0) {
            Run& last = runs[count - 1];
            if (last.view == &view && last.write == write && last.init == init && last.end == off) {
                last.end += n;
                return;
            }
        }
        if (count == capacity) {
            overflow = true;
            return;
        }
        runs[count++] = Run{&view, write, init, off, off + n};
    }

    bool commit() const
    {
        if (overflow) {
            return false;
        }
        bool race = sanitizing(SANITIZE_RACE);
        bool init = sanitizing(SANITIZE_INIT);
        int pipe = -1;
        for (int i = 0; i < count; ++i) {
            const Run& r = runs[i];
            Memory mem = r.view->mem;
            uint64_t at = r.view->base + r.off;
            uint64_t n = r.end - r.off;
            if (race) {
                int p = race_pipe(mem, r.write);
                if ((pipe >= 0 && p != pipe) || !race_clean(mem, at, n, r.write)) {
                    return false;
                }
                pipe = p;
            }
            if (init && r.init && !r.write && !init_written(mem, at, n)) {
                return false;
            }
        }
        for (int i = 0; i < count; ++i) {
            const Run& r = runs[i];
            Memory mem = r.view->mem;
            uint64_t at = r.view->base + r.off;
            uint64_t n = r.end - r.off;
            instr_access(mem, r.write);
            if (race) {
                const char* what = r.view->what;
                if (r.write && r.init && what[0] == '\0') {
                    what = instr.name; // as access_write_at names a writer
                }
                race_commit(mem, at, n, r.write, what);
            }
            if (init && r.init && r.write) {
                init_fill(mem, at, n);
            }
        }
        return true;
    }
};

} // namespace pypto_emu

namespace AscendC {

class TPipe;
template <TPosition pos, uint32_t bufIDSize>
class TBufPool;

// A queue of buffers between pipeline stages (the protocol shared by TQue
// and TQueBind; see QueueOps for the public members).
class QueueBase {
public:
    bool HasTensorInQue() const { return !fifo_.empty() || queued_in_place() != 0; }
    int32_t GetTensorCountInQue() const { return static_cast<int32_t>(fifo_.size()) + queued_in_place(); }
    bool HasIdleBuffer() const
    {
        if (!initialised()) {
            return false;
        }
        for (const pypto_emu::Slot& s : slots_) {
            if (s.state == pypto_emu::Slot::State::Free) {
                return true;
            }
        }
        return false;
    }

    // racecheck: where byte `at` of `mem` is when one of this queue's
    // buffers holds it, e.g. ", in TQue<VECIN> buffer 1 (UB bytes [4096, 8192))".
    std::string race_describe(pypto_emu::Memory mem, uint64_t at) const
    {
        if (!initialised() || pypto_emu::memory_of(position_) != mem) {
            return {};
        }
        const uint8_t* base = pypto_emu::arena(mem);
        for (size_t i = 0; i < slots_.size(); ++i) {
            auto lo = static_cast<uint64_t>(slots_[i].data - base);
            uint64_t hi = lo + slots_[i].bytes;
            if (at >= lo && at < hi) {
                std::string kind = src_ == dst_ ? pypto_emu::concat("TQue<", name(), ">")
                                                : pypto_emu::concat("TQueBind<", pypto_emu::position_name(src_),
                                                                    ", ", pypto_emu::position_name(dst_), ">");
                return pypto_emu::concat(", in ", kind, " buffer ", i, " (", pypto_emu::memory_short_name(mem),
                                         " bytes [", lo, ", ", hi, "))");
            }
        }
        return {};
    }

protected:
    QueueBase(TPosition position, TPosition src, TPosition dst, int32_t depth)
        : position_(position), src_(src), dst_(dst), depth_(depth)
    {
    }

    QueueBase(const QueueBase&) = default;
    QueueBase& operator=(const QueueBase&) = default;

    ~QueueBase()
    {
        auto& live = pypto_emu::block.queues;
        for (auto it = live.begin(); it != live.end(); ++it) {
            if (*it == this) {
                live.erase(it);
                if (initialised()) {
                    note_leak("when the block ended");
                }
                break;
            }
        }
    }

    // synccheck: records the first buffer not given back (once per block).
    void note_leak(const char* when) const
    {
        if (!pypto_emu::sanitizing(pypto_emu::SANITIZE_SYNC) || !pypto_emu::block.sync_leak.empty()) {
            return;
        }
        for (const pypto_emu::Slot& s : slots_) {
            switch (s.state) {
            case pypto_emu::Slot::State::Free: continue;
            case pypto_emu::Slot::State::Allocated:
                pypto_emu::block.sync_leak = pypto_emu::concat(
                    "synccheck: a buffer of TQue<", name(), "> taken by AllocTensor was never freed ", when,
                    "; call FreeTensor after its last use");
                return;
            case pypto_emu::Slot::State::Queued:
                pypto_emu::block.sync_leak = pypto_emu::concat(
                    "synccheck: a buffer of TQue<", name(), "> was left in the queue (EnQue with no DeQue) ",
                    when, "; DeQue it, and FreeTensor it after its last use");
                return;
            case pypto_emu::Slot::State::Dequeued:
                pypto_emu::block.sync_leak = pypto_emu::concat(
                    "synccheck: a buffer of TQue<", name(), "> was dequeued but never freed ", when,
                    "; call FreeTensor after its last use");
                return;
            }
        }
    }

    const char* name() const { return pypto_emu::position_name(position_); }

    bool initialised() const { return !slots_.empty() && epoch_ == pypto_emu::pipe_epoch(); }

    void require_init(const char* what) const
    {
        if (slots_.empty()) {
            pypto_emu::fail("TQue<", name(), ">::", what, ": the queue has no buffers; call TPipe::InitBuffer first");
        }
        if (epoch_ != pypto_emu::pipe_epoch()) {
            pypto_emu::fail("TQue<", name(), ">::", what, ": the queue's buffers were released by TPipe::Reset or "
                            "Destroy (or belong to an earlier TPipe); call InitBuffer again");
        }
        if (events_freed_) {
            pypto_emu::fail("TQue<", name(), ">::", what, ": the queue's events were released by FreeAllEvent; "
                            "it cannot be used again");
        }
    }

    // racecheck: the pipes a buffer of this queue passes between (EnQue's
    // user path when it named one).
    void race_pipes(const pypto_emu::Slot& s, pipe_t& from, pipe_t& to) const
    {
        pypto_emu::queue_pipes(src_, dst_, s.user_src, s.user_dst, from, to);
    }

    pypto_emu::Slot* take_free(const char* what)
    {
        pypto_emu::poll(what);
        require_init("AllocTensor");
        // Buffers are handed out in turn, as the vendor's queues do (so
        // that two buffers ping-pong: the next is filled while the last
        // is still in use), not lowest-free first.
        for (size_t i = 0; i < slots_.size(); ++i) {
            pypto_emu::Slot& s = slots_[(cursor_ + i) % slots_.size()];
            if (s.state == pypto_emu::Slot::State::Free) {
                cursor_ = static_cast<uint32_t>((cursor_ + i + 1) % slots_.size());
                s.state = pypto_emu::Slot::State::Allocated;
                s.tag = 0;
                if (s.model_was_freed && pypto_emu::modelling()) {
                    pipe_t from, to;
                    pypto_emu::queue_pipes(src_, dst_, TPosition::MAX, TPosition::MAX, from, to);
                    pypto_emu::model_queue_wait(from, s.model_freed, to); // WaitFlag<consumer_producer>
                }
                if (s.race_was_freed && pypto_emu::sanitizing(pypto_emu::SANITIZE_RACE)) {
                    // The buffer is filled again the queue's own way (a
                    // TQueBind's user path applies to one trip only).
                    pipe_t from, to;
                    pypto_emu::queue_pipes(src_, dst_, TPosition::MAX, TPosition::MAX, from, to);
                    pypto_emu::race_queue_wait(from, s.race_freed); // WaitFlag<consumer_producer>
                }
                return &s;
            }
        }
        pypto_emu::fail("TQue<", name(), ">::AllocTensor: all ", slots_.size(), " buffers are in use; FreeTensor one "
                        "first (on the NPU this call would wait forever)");
    }

    template <typename T>
    LocalTensor<T> tensor_of(pypto_emu::Slot* s) const
    {
        LocalTensor<T> t = LocalTensor<T>::make(s->data, s->bytes, offset_of(*s), position_, s);
        t.set_tag(s->tag);
        return t;
    }

    template <typename T>
    bool enque(const LocalTensor<T>& tensor, TPosition user_src, TPosition user_dst)
    {
        require_init("EnQue");
        pypto_emu::Slot* s = owned_slot(tensor, "EnQue");
        if (s->state != pypto_emu::Slot::State::Allocated && s->state != pypto_emu::Slot::State::Dequeued) {
            pypto_emu::fail("TQue<", name(), ">::EnQue: the tensor is already in the queue");
        }
        if (depth_ != 0 && static_cast<int32_t>(fifo_.size()) >= depth_) {
            pypto_emu::fail("TQue<", name(), ">::EnQue: the queue is full (depth ", depth_,
                            "); DeQue before enqueuing again");
        }
        s->state = pypto_emu::Slot::State::Queued;
        s->tag = tensor.GetUserTag();
        s->user_src = user_src;
        s->user_dst = user_dst;
        if (pypto_emu::sanitizing(pypto_emu::SANITIZE_RACE)) {
            pipe_t from, to;
            race_pipes(*s, from, to);
            pypto_emu::race_queue_signal(from, s->race_filled); // SetFlag<producer_consumer>
        }
        if (pypto_emu::modelling()) {
            pipe_t from, to;
            race_pipes(*s, from, to);
            s->model_filled = pypto_emu::model_signal(from);
        }
        if (depth_ != 0) {
            fifo_.push_back(static_cast<uint8_t>(s - slots_.data()));
        }
        return true;
    }

    pypto_emu::Slot* deque(TPosition user_src, TPosition user_dst)
    {
        pypto_emu::poll("TQue::DeQue");
        require_init("DeQue");
        if (fifo_.empty()) {
            pypto_emu::fail("TQue<", name(), ">::DeQue: the queue is empty; EnQue a tensor first");
        }
        pypto_emu::Slot* s = &slots_[fifo_.front()];
        if (user_src != TPosition::MAX && s->user_src != TPosition::MAX &&
            (s->user_src != user_src || s->user_dst != user_dst)) {
            pypto_emu::fail("TQue<", name(), ">::DeQue<", pypto_emu::position_name(user_src), ", ",
                            pypto_emu::position_name(user_dst), ">: the tensor at the head was enqueued as ",
                            pypto_emu::position_name(s->user_src), " -> ", pypto_emu::position_name(s->user_dst));
        }
        fifo_.pop_front();
        s->state = pypto_emu::Slot::State::Dequeued;
        race_dequeued(*s);
        return s;
    }

    // In-place (depth 0): the tensor names its buffer; nothing is stored in
    // the queue, but the buffer must have been enqueued.
    template <typename T>
    void deque_in_place(LocalTensor<T>& tensor)
    {
        pypto_emu::poll("TQue::DeQue");
        require_init("DeQue");
        pypto_emu::Slot* s = owned_slot(tensor, "DeQue");
        if (s->state != pypto_emu::Slot::State::Queued) {
            pypto_emu::fail("TQue<", name(), ">::DeQue: the tensor is not in the queue; EnQue it first");
        }
        s->state = pypto_emu::Slot::State::Dequeued;
        race_dequeued(*s);
        tensor = tensor_of<T>(s);
    }

    template <typename T>
    void free_tensor(LocalTensor<T>& tensor)
    {
        require_init("FreeTensor");
        pypto_emu::Slot* s = owned_slot(tensor, "FreeTensor");
        switch (s->state) {
        case pypto_emu::Slot::State::Free:
            pypto_emu::fail("TQue<", name(), ">::FreeTensor: the buffer is already free (freed twice)");
        case pypto_emu::Slot::State::Queued:
            pypto_emu::fail("TQue<", name(), ">::FreeTensor: the tensor is still in the queue; DeQue it first");
        default:
            s->state = pypto_emu::Slot::State::Free;
        }
        if (pypto_emu::sanitizing(pypto_emu::SANITIZE_RACE)) {
            pipe_t from, to;
            race_pipes(*s, from, to);
            pypto_emu::race_queue_signal(to, s->race_freed); // SetFlag<consumer_producer>
            s->race_was_freed = true;
        }
        if (pypto_emu::modelling()) {
            pipe_t from, to;
            race_pipes(*s, from, to);
            s->model_freed = pypto_emu::model_signal(to);
            s->model_was_freed = true;
        }
    }

    void race_dequeued(const pypto_emu::Slot& s) const
    {
        if (pypto_emu::sanitizing(pypto_emu::SANITIZE_RACE)) {
            pipe_t from, to;
            race_pipes(s, from, to);
            pypto_emu::race_queue_wait(to, s.race_filled); // WaitFlag<producer_consumer>
        }
        if (pypto_emu::modelling()) {
            pipe_t from, to;
            race_pipes(s, from, to);
            pypto_emu::model_queue_wait(to, s.model_filled, from); // WaitFlag<producer_consumer>
        }
    }

    // Gives the queue `num` buffers of `bytes` bytes at byte `offset` of
    // its memory.
    void attach(uint32_t offset, uint8_t num, uint32_t bytes, TPipe* pipe)
    {
        uint8_t* base = pypto_emu::arena(pypto_emu::memory_of(position_));
        slots_.assign(num, pypto_emu::Slot{});
        cursor_ = 0;
        fifo_.clear();
        for (uint8_t i = 0; i < num; ++i) {
            slots_[i].data = base + offset + static_cast<uint32_t>(i) * bytes;
            slots_[i].bytes = bytes;
        }
        base_offset_ = offset;
        epoch_ = pypto_emu::pipe_epoch();
        pipe_ = pipe;
        events_freed_ = false;
        auto& live = pypto_emu::block.queues;
        if (std::find(live.begin(), live.end(), static_cast<void*>(this)) == live.end()) {
            live.push_back(this);
        }
    }

    template <typename T>
    pypto_emu::Slot* owned_slot(const LocalTensor<T>& tensor, const char* what)
    {
        for (pypto_emu::Slot& s : slots_) {
            if (&s == tensor.slot() && reinterpret_cast<uint8_t*>(tensor.data()) == s.data) {
                return &s;
            }
        }
        pypto_emu::fail("TQue<", name(), ">::", what, ": the tensor was not allocated from this queue (or is a "
                        "view made with operator[])");
    }

    uint32_t offset_of(const pypto_emu::Slot& s) const
    {
        return base_offset_ + static_cast<uint32_t>(s.data - slots_.front().data);
    }

    int32_t queued_in_place() const
    {
        int32_t n = 0;
        if (depth_ == 0 && initialised()) {
            for (const pypto_emu::Slot& s : slots_) {
                n += s.state == pypto_emu::Slot::State::Queued ? 1 : 0;
            }
        }
        return n;
    }

    friend class TPipe;
    template <TPosition, uint32_t>
    friend class TBufPool;

    TPosition position_;
    TPosition src_;
    TPosition dst_;
    int32_t depth_;
    std::vector<pypto_emu::Slot> slots_;
    pypto_emu::SlotFifo fifo_;
    uint32_t cursor_ = 0; // the buffer AllocTensor tries first
    uint32_t base_offset_ = 0;
    uint64_t epoch_ = 0;
    TPipe* pipe_ = nullptr;
    bool events_freed_ = false;
};

// The public members of TQue and TQueBind. Depth 0 makes an in-place queue:
// AllocTensor(tensor) and DeQue(tensor) work on a tensor the kernel keeps,
// EnQue/FreeTensor are as usual, and the queue holds no list (its state is
// that of each buffer). Other depths take the forms returning a tensor.
} // namespace AscendC

namespace pypto_emu {

PYPTO_RUNTIME std::string describe_local(Memory mem, uint64_t at)
#if PYPTO_RUNTIME_BODY
{
    for (void* q : block.queues) {
        std::string d = static_cast<const AscendC::QueueBase*>(q)->race_describe(mem, at);
        if (!d.empty()) {
            return d;
        }
    }
    return {};
}
#else
;
#endif

} // namespace pypto_emu

namespace AscendC {

template <int32_t depth>
class QueueOps : public QueueBase {
    static_assert(depth >= 0, "TQue: the depth must not be negative");

protected:
    using QueueBase::QueueBase;

public:
    template <typename T>
    LocalTensor<T> AllocTensor()
    {
        static_assert(depth != 0, "TQue::AllocTensor<T>(): a queue of depth 0 is in-place; use AllocTensor<T>(tensor)");
        return tensor_of<T>(take_free("TQue::AllocTensor"));
    }

    template <typename T>
    void AllocTensor(LocalTensor<T>& tensor)
    {
        static_assert(depth == 0, "TQue::AllocTensor<T>(tensor) is the in-place form; it needs a queue of depth 0");
        tensor = tensor_of<T>(take_free("TQue::AllocTensor"));
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor)
    {
        return enque(tensor, TPosition::MAX, TPosition::MAX);
    }

    // VECIN/VECOUT sharing through TQueBind: the path is GM -> VECIN/VECOUT
    // or VECIN/VECOUT -> GM; DeQue must name the pair EnQue named.
    template <TPosition srcUserPos, TPosition dstUserPos, typename T>
    bool EnQue(const LocalTensor<T>& tensor)
    {
        check_user_path<srcUserPos, dstUserPos>();
        return enque(tensor, srcUserPos, dstUserPos);
    }

    template <typename T>
    LocalTensor<T> DeQue()
    {
        static_assert(depth != 0, "TQue::DeQue<T>(): a queue of depth 0 is in-place; use DeQue<T>(tensor)");
        return tensor_of<T>(deque(TPosition::MAX, TPosition::MAX));
    }

    template <TPosition srcUserPos, TPosition dstUserPos, typename T>
    LocalTensor<T> DeQue()
    {
        static_assert(depth != 0, "TQue::DeQue<src, dst, T>() needs a queue of nonzero depth");
        check_user_path<srcUserPos, dstUserPos>();
        return tensor_of<T>(deque(srcUserPos, dstUserPos));
    }

    template <typename T>
    void DeQue(LocalTensor<T>& tensor)
    {
        static_assert(depth == 0, "TQue::DeQue<T>(tensor) is the in-place form; it needs a queue of depth 0");
        deque_in_place(tensor);
    }

    template <typename T>
    void FreeTensor(LocalTensor<T>& tensor)
    {
        free_tensor(tensor);
    }

    bool VacantInQue() const
    {
        static_assert(depth != 0, "TQue::VacantInQue is not supported for in-place queues (depth 0)");
        return static_cast<int32_t>(fifo_.size()) < depth;
    }

    // Releases the hardware events of the queue's buffers, so that other
    // queues can be given buffers at its position; the queue is finished.
    void FreeAllEvent();

private:
    template <TPosition s, TPosition d>
    static constexpr void check_user_path()
    {
        constexpr bool ub_s = s == TPosition::VECIN || s == TPosition::VECOUT;
        constexpr bool ub_d = d == TPosition::VECIN || d == TPosition::VECOUT;
        static_assert((s == TPosition::GM && ub_d) || (ub_s && d == TPosition::GM),
                      "TQue::EnQue/DeQue<srcUserPos, dstUserPos>: only GM -> VECIN/VECOUT and VECIN/VECOUT -> GM");
    }
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public QueueOps<depth> {
public:
    TQue() : QueueOps<depth>(pos, pos, pos, depth) {}
};

// A queue between two positions; its buffers are in the source's memory
// (the destination's for a GM source).
template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind : public QueueOps<depth> {
public:
    TQueBind() : QueueOps<depth>(src == TPosition::GM ? dst : src, src, dst, depth) {}
};

// A single buffer for temporaries: no queue protocol.
template <TPosition pos>
class TBuf {
public:
    template <typename T>
    LocalTensor<T> Get() const
    {
        require_init("Get");
        return LocalTensor<T>::make(data_, bytes_, offset_, pos, nullptr);
    }

    // `len` elements; they must fit the buffer.
    template <typename T>
    LocalTensor<T> Get(uint32_t len) const
    {
        require_init("Get");
        uint64_t bytes = pypto_emu::bytes_for<T>(len);
        if (bytes > bytes_) {
            pypto_emu::fail("TBuf<", pypto_emu::position_name(pos), ">::Get: ", len, " elements (", bytes,
                            " bytes) exceed the buffer's ", bytes_, " bytes");
        }
        LocalTensor<T> t = LocalTensor<T>::make(data_, static_cast<uint32_t>(bytes), offset_, pos, nullptr);
        t.SetSize(len);
        return t;
    }

    // `size` elements from byte `bufOffset` (a multiple of 32).
    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) const
    {
        require_init("GetWithOffset");
        if (bufOffset % 32 != 0) {
            pypto_emu::fail("TBuf<", pypto_emu::position_name(pos), ">::GetWithOffset: byte offset ", bufOffset,
                            " is not a multiple of 32");
        }
        uint64_t bytes = pypto_emu::bytes_for<T>(size);
        if (bytes + bufOffset > bytes_) {
            pypto_emu::fail("TBuf<", pypto_emu::position_name(pos), ">::GetWithOffset: ", size, " elements (",
                            bytes, " bytes) at byte ", bufOffset, " exceed the buffer's ", bytes_, " bytes");
        }
        LocalTensor<T> t = LocalTensor<T>::make(data_ + bufOffset, static_cast<uint32_t>(bytes),
                                                offset_ + bufOffset, pos, nullptr);
        t.SetSize(size);
        return t;
    }

private:
    friend class TPipe;
    template <TPosition, uint32_t>
    friend class TBufPool;

    void require_init(const char* what) const
    {
        if (data_ == nullptr) {
            pypto_emu::fail("TBuf<", pypto_emu::position_name(pos), ">::", what,
                            ": the buffer has no memory; call TPipe::InitBuffer first");
        }
        if (epoch_ != pypto_emu::pipe_epoch()) {
            pypto_emu::fail("TBuf<", pypto_emu::position_name(pos), ">::", what, ": the buffer was released by "
                            "TPipe::Reset or Destroy (or belongs to an earlier TPipe); call InitBuffer again");
        }
    }

    void attach(uint32_t offset, uint32_t bytes)
    {
        data_ = pypto_emu::arena(pypto_emu::memory_of(pos)) + offset;
        bytes_ = bytes;
        offset_ = offset;
        epoch_ = pypto_emu::pipe_epoch();
    }

    uint8_t* data_ = nullptr;
    uint32_t bytes_ = 0;
    uint32_t offset_ = 0;
    uint64_t epoch_ = 0;
};

// A pool of Unified Buffer or L1 memory carved out of the TPipe (or out of
// another pool), from which queues, TBufs and smaller pools get their
// buffers; a pool may share another pool's memory (both start at the same
// byte). bufIDSize buffers at most (up to 16).
template <TPosition pos, uint32_t bufIDSize = 4>
class TBufPool {
    static_assert(bufIDSize <= 16, "TBufPool: bufIDSize is at most 16");
    static_assert(pos == TPosition::VECIN || pos == TPosition::VECOUT || pos == TPosition::VECCALC ||
                      pos == TPosition::A1 || pos == TPosition::B1 || pos == TPosition::C1,
                  "TBufPool: the position must be VECIN, VECOUT, VECCALC, A1, B1 or C1");

public:
    static constexpr TPosition position = pos;
    static constexpr uint32_t buf_ids = bufIDSize;

    TBufPool() = default;

    template <class Queue>
    bool InitBuffer(Queue& que, uint8_t num, uint32_t len)
    {
        static_assert(std::is_base_of_v<QueueBase, Queue>, "TBufPool::InitBuffer(que, num, len) takes a TQue");
        const char* what = "TBufPool::InitBuffer";
        require_init(what);
        if (pypto_emu::memory_of(que.position_) != pypto_emu::memory_of(pos)) {
            pypto_emu::fail(what, ": a queue at ", pypto_emu::position_name(que.position_),
                            " cannot take buffers from a pool at ", pypto_emu::position_name(pos),
                            " (another memory)");
        }
        if (num == 0 || len == 0) {
            pypto_emu::fail(what, ": ", static_cast<int>(num), " buffers of ", len, " bytes; both must be positive");
        }
        uint32_t bytes = round32(len);
        uint32_t offset = take(what, num, static_cast<uint64_t>(bytes) * num);
        count_buffers(que.position_, num, true);
        que.attach(offset, num, bytes, pipe_);
        return true;
    }

    template <TPosition bufPos>
    bool InitBuffer(TBuf<bufPos>& buf, uint32_t len)
    {
        static_assert(pypto_emu::memory_of(bufPos) == pypto_emu::memory_of(pos),
                      "TBufPool::InitBuffer: the TBuf must be in the pool's memory");
        const char* what = "TBufPool::InitBuffer";
        require_init(what);
        if (len == 0) {
            pypto_emu::fail(what, ": a TBuf of 0 bytes");
        }
        uint32_t bytes = round32(len);
        uint32_t offset = take(what, 1, bytes);
        count_buffers(bufPos, 1, false);
        buf.attach(offset, bytes);
        return true;
    }

    // A pool of `len` bytes from this one; it takes its bufIDSize buffers
    // from this pool's remaining ones.
    template <class Pool>
    bool InitBufPool(Pool& pool, uint32_t len)
    {
        static_assert(pypto_emu::memory_of(Pool::position) == pypto_emu::memory_of(pos),
                      "TBufPool::InitBufPool: the new pool must be in the same memory");
        const char* what = "TBufPool::InitBufPool";
        require_init(what);
        pool.check_fresh(what);
        uint32_t bytes = round32(len);
        if (Pool::buf_ids > bufIDSize - ids_used_) {
            pypto_emu::fail(what, ": the new pool's ", Pool::buf_ids, " buffers exceed the ",
                            bufIDSize - ids_used_, " this pool has left");
        }
        uint32_t offset = take(what, 0, bytes);
        ids_used_ += Pool::buf_ids;
        pool.setup(offset, bytes, pipe_);
        return true;
    }

    // A pool sharing `shareBuf`'s memory (same start; len at most its length).
    template <class Pool, class Share>
    bool InitBufPool(Pool& pool, uint32_t len, Share& shareBuf)
    {
        static_assert(pypto_emu::memory_of(Pool::position) == pypto_emu::memory_of(Share::position),
                      "TBufPool::InitBufPool: a pool must share memory of the same kind");
        const char* what = "TBufPool::InitBufPool";
        require_init(what);
        pool.check_fresh(what);
        shareBuf.require_init(what);
        if (Pool::buf_ids > bufIDSize) {
            pypto_emu::fail(what, ": the new pool's ", Pool::buf_ids, " buffers exceed this pool's ", bufIDSize);
        }
        pool.setup_shared(round32(len), shareBuf, what);
        return true;
    }

    // Ends the pool's use before switching to another pool; its buffers
    // stay allocated (their contents may be overwritten by the other pool).
    // The pool's buffers may be reused by another pool: the framework
    // orders the switch (the TBufPool page: queues used in pairs across
    // pools are synchronised automatically), so racecheck sees a barrier.
    void Reset()
    {
        require_init("TBufPool::Reset");
        pypto_emu::model_barrier(PIPE_ALL);
        if (pypto_emu::sanitizing(pypto_emu::SANITIZE_RACE)) {
            pypto_emu::race_barrier(PIPE_ALL);
        }
    }

private:
    friend class TPipe;
    template <TPosition, uint32_t>
    friend class TBufPool;

    static uint32_t round32(uint32_t n) { return (n + 31) / 32 * 32; }

    void require_init(const char* what) const
    {
        if (epoch_ == 0) {
            pypto_emu::fail(what, ": the TBufPool has no memory; call TPipe::InitBufPool first");
        }
        if (epoch_ != pypto_emu::pipe_epoch()) {
            pypto_emu::fail(what, ": the TBufPool was released by TPipe::Reset or Destroy; call InitBufPool again");
        }
    }

    void check_fresh(const char* what) const
    {
        if (epoch_ != 0 && epoch_ == pypto_emu::pipe_epoch()) {
            pypto_emu::fail(what, ": the TBufPool already has memory");
        }
    }

    // `bytes` more bytes and `ids` more buffer IDs; returns the offset.
    uint32_t take(const char* what, uint32_t ids, uint64_t bytes)
    {
        if (ids_used_ + ids > bufIDSize) {
            pypto_emu::fail(what, ": ", ids, " more buffer", ids == 1 ? "" : "s", " exceed the pool's bufIDSize of ",
                            bufIDSize, " (", ids_used_, " used)");
        }
        if (used_ + bytes > len_) {
            pypto_emu::fail(what, ": ", bytes, " bytes exceed the ", len_ - used_, " bytes left in the pool (",
                            len_, " bytes)");
        }
        uint32_t offset = start_ + used_;
        used_ += static_cast<uint32_t>(bytes);
        ids_used_ += ids;
        return offset;
    }

    void count_buffers(TPosition p, uint32_t num, bool queued);

    void setup(uint32_t start, uint32_t len, TPipe* pipe)
    {
        start_ = start;
        len_ = len;
        used_ = 0;
        ids_used_ = 0;
        pipe_ = pipe;
        epoch_ = pypto_emu::pipe_epoch();
    }

    template <class Share>
    void setup_shared(uint32_t len, const Share& share, const char* what)
    {
        if (len > share.len_) {
            pypto_emu::fail(what, ": ", len, " bytes exceed the ", share.len_, " bytes of the pool to share");
        }
        setup(share.start_, len, share.pipe_);
    }

    uint32_t start_ = 0;
    uint32_t len_ = 0;
    uint32_t used_ = 0;
    uint32_t ids_used_ = 0;
    TPipe* pipe_ = nullptr;
    uint64_t epoch_ = 0;
};
// Owns the on-chip memories of one block and hands out their buffers.
class TPipe {
public:
    TPipe()
    {
        if (pypto_emu::block.live_pipes != 0) {
            pypto_emu::fail("TPipe: another TPipe is alive in this block; only one may exist at "
                            "a time (Destroy the first)");
        }
        if (pypto_emu::block.allocators != 0) {
            pypto_emu::fail("TPipe: a LocalMemAllocator is alive in this block; static tensor "
                            "programming does not mix with TPipe");
        }
        ++pypto_emu::block.live_pipes;
        alive_ = true;
        pypto_emu::block.pipe = this;
        ++pypto_emu::pipe_epoch();
    }

    // A live TPipe going out of scope runs Destroy: PIPE_ALL included.
    ~TPipe()
    {
        if (alive_) {
            note_leaks("when the block ended");
            pipe_all();
        }
        if (alive_) {
            --pypto_emu::block.live_pipes;
            ++pypto_emu::pipe_epoch();
        }
        if (pypto_emu::block.pipe == this) {
            pypto_emu::block.pipe = nullptr;
        }
    }

    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <class Queue>
    bool InitBuffer(Queue& que, uint8_t num, uint32_t len)
    {
        static_assert(std::is_base_of_v<QueueBase, Queue>, "InitBuffer(que, num, len) takes a TQue");
        if (que.initialised()) {
            pypto_emu::fail("TPipe::InitBuffer: the queue already has buffers; Reset the pipe first");
        }
        if (num == 0 || len == 0) {
            pypto_emu::fail("TPipe::InitBuffer: ", static_cast<int>(num), " buffers of ", len,
                            " bytes; both must be positive");
        }
        pypto_emu::Memory mem = pypto_emu::memory_of(que.position_);
        count_buffers(que.position_, num, true);
        uint32_t bytes = round_up(len, 32);
        uint32_t offset = allocate(mem, static_cast<uint64_t>(bytes) * num, num, bytes);
        que.attach(offset, num, bytes, this);
        return true;
    }

    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t len)
    {
        if (buf.data_ != nullptr && buf.epoch_ == pypto_emu::pipe_epoch()) {
            pypto_emu::fail("TPipe::InitBuffer: the TBuf already has memory; Reset the pipe first");
        }
        if (len == 0) {
            pypto_emu::fail("TPipe::InitBuffer: a TBuf of 0 bytes");
        }
        pypto_emu::Memory mem = pypto_emu::memory_of(pos);
        count_buffers(pos, 1, false);
        uint32_t bytes = round_up(len, 32);
        uint32_t offset = allocate(mem, bytes, 1, bytes);
        buf.attach(offset, bytes);
        return true;
    }

    // A TBufPool of `len` bytes (rounded up to 32) of its position's memory.
    template <class Pool>
    bool InitBufPool(Pool& bufPool, uint32_t len)
    {
        const char* what = "TPipe::InitBufPool";
        bufPool.check_fresh(what);
        if (len == 0) {
            pypto_emu::fail(what, ": a pool of 0 bytes");
        }
        uint32_t bytes = round_up(len, 32);
        uint32_t offset = allocate(pypto_emu::memory_of(Pool::position), bytes, 1, bytes, what);
        bufPool.setup(offset, bytes, this);
        return true;
    }

    // A TBufPool sharing `shareBuf`'s memory (same start; len at most its length).
    template <class Pool, class Share>
    bool InitBufPool(Pool& bufPool, uint32_t len, Share& shareBuf)
    {
        static_assert(pypto_emu::memory_of(Pool::position) == pypto_emu::memory_of(Share::position),
                      "TPipe::InitBufPool: a pool must share memory of the same kind");
        const char* what = "TPipe::InitBufPool";
        bufPool.check_fresh(what);
        shareBuf.require_init(what);
        bufPool.setup_shared(round_up(len, 32), shareBuf, what);
        return true;
    }

    // CPU debugging: the host address of a position's memory.
    uint8_t* GetBaseAddr(int8_t logicPos)
    {
        return pypto_emu::arena(pypto_emu::memory_of(static_cast<TPosition>(logicPos)));
    }

    // Releases every buffer; queues and TBufs must be initialised again.
    void Reset()
    {
        note_queue_leaks("when TPipe::Reset or Destroy released the buffers");
        ++pypto_emu::pipe_epoch();
        for (auto& used : used_) {
            used = 0;
        }
        buffers_ = 0;
        for (auto& n : per_position_) {
            n = 0;
        }
    }

    // Releases every buffer and event ID, after a PipeBarrier<PIPE_ALL>
    // (the DestroyWithoutPipeAll page: that form is Destroy without it), so
    // a later TPipe's buffers may reuse the bytes with no further
    // synchronisation.
    void Destroy()
    {
        if (alive_) {
            pipe_all();
        }
        DestroyWithoutPipeAll();
    }

    // As Destroy, without the PIPE_ALL: the kernel orders the pipes itself.
    void DestroyWithoutPipeAll()
    {
        if (alive_) {
            note_event_leaks("when TPipe::Destroy ran");
        }
        Reset();
        if (alive_) {
            --pypto_emu::block.live_pipes;
            alive_ = false;
        }
        if (pypto_emu::block.pipe == this) {
            pypto_emu::block.pipe = nullptr;
        }
    }

    void Init()
    {
        if (!alive_) {
            if (pypto_emu::block.live_pipes != 0) {
                pypto_emu::fail("TPipe::Init: another TPipe is alive in this block");
            }
            ++pypto_emu::block.live_pipes;
            alive_ = true;
        }
        pypto_emu::block.pipe = this;
    }

    // Event IDs of one HardEvent for SetFlag/WaitFlag: IDs 0-7 (EVENT_ID0..7).
    // AllocEventID holds an ID until ReleaseEventID; FetchEventID names the
    // lowest ID not held, without holding it.
    template <HardEvent evt>
    TEventID AllocEventID()
    {
        uint8_t& held = events_[static_cast<int>(evt)];
        for (int id = 0; id < 8; ++id) {
            if ((held & (1u << id)) == 0) {
                held = static_cast<uint8_t>(held | (1u << id));
                return static_cast<TEventID>(id);
            }
        }
        pypto_emu::fail("TPipe::AllocEventID<HardEvent::", pypto_emu::hard_event_name(evt),
                        ">: all 8 event IDs are allocated; ReleaseEventID one first");
    }

    template <HardEvent evt>
    void ReleaseEventID(TEventID id)
    {
        uint8_t& held = events_[static_cast<int>(evt)];
        if (id < 0 || id > 7 || (held & (1u << id)) == 0) {
            pypto_emu::fail("TPipe::ReleaseEventID<HardEvent::", pypto_emu::hard_event_name(evt),
                            ">(", static_cast<int>(id), "): the ID was not allocated by AllocEventID");
        }
        held = static_cast<uint8_t>(held & ~(1u << id));
    }

    template <HardEvent evt>
    TEventID FetchEventID()
    {
        return FetchEventID(evt);
    }

    TEventID FetchEventID(HardEvent evt)
    {
        uint8_t held = events_[static_cast<int>(evt)];
        for (int id = 0; id < 8; ++id) {
            if ((held & (1u << id)) == 0) {
                return static_cast<TEventID>(id);
            }
        }
        pypto_emu::fail("TPipe::FetchEventID(HardEvent::", pypto_emu::hard_event_name(evt),
                        "): all 8 event IDs are allocated; ReleaseEventID one first");
    }

    // synccheck: records the first queue buffer or event ID still held.
    void note_leaks(const char* when)
    {
        note_queue_leaks(when);
        note_event_leaks(when);
    }

private:
    template <TPosition, uint32_t>
    friend class TBufPool;
    template <int32_t>
    friend class QueueOps;

    // The PipeBarrier<PIPE_ALL> that Destroy ends with (racecheck).
    static void pipe_all()
    {
        pypto_emu::model_barrier(PIPE_ALL);
        if (pypto_emu::sanitizing(pypto_emu::SANITIZE_RACE)) {
            pypto_emu::race_barrier(PIPE_ALL);
        }
    }

    void note_queue_leaks(const char* when)
    {
        if (!pypto_emu::sanitizing(pypto_emu::SANITIZE_SYNC)) {
            return;
        }
        for (void* q : pypto_emu::block.queues) {
            const auto* queue = static_cast<const QueueBase*>(q);
            if (queue->pipe_ == this && queue->initialised()) {
                queue->note_leak(when);
            }
        }
    }

    void note_event_leaks(const char* when)
    {
        if (!pypto_emu::sanitizing(pypto_emu::SANITIZE_SYNC) || !pypto_emu::block.sync_leak.empty()) {
            return;
        }
        for (int e = 0; e < 64; ++e) {
            if (events_[e] == 0) {
                continue; // every ID of this event released (nearly always)
            }
            int id = __builtin_ctz(events_[e]);
            const char* n = pypto_emu::hard_event_name(static_cast<HardEvent>(e));
            pypto_emu::block.sync_leak = pypto_emu::concat(
                "synccheck: TPipe::AllocEventID<HardEvent::", n, "> handed out ID ", id,
                ", which was never released ", when, "; call ReleaseEventID<HardEvent::", n, ">(", id,
                ") once the ID's last WaitFlag is done");
            return;
        }
    }

    static uint32_t round_up(uint32_t n, uint32_t to) { return (n + to - 1) / to * to; }

    uint8_t* base(pypto_emu::Memory mem) { return pypto_emu::arena(mem); }

    uint32_t allocate(pypto_emu::Memory mem, uint64_t total, uint32_t num, uint32_t each,
                      const char* what = "TPipe::InitBuffer")
    {
        const auto& spec = pypto_emu::memory_spec(mem);
        if (mem == pypto_emu::Memory::GM) {
            pypto_emu::fail(what, ": the position is in global memory, not on chip");
        }
        uint32_t& used = used_[static_cast<int>(mem)];
        uint32_t start = round_up(used, spec.align);
        if (start + total > spec.usable) {
            pypto_emu::fail(what, ": ", num, " buffer", num == 1 ? "" : "s", " of ",
                            each, " bytes need ", total, " bytes of the ", spec.name, ", but ",
                            used, " of its ", spec.usable, " usable bytes are taken (",
                            spec.capacity, " bytes", *spec.why ? ", " : "", spec.why, ")");
        }
        used = static_cast<uint32_t>(start + total);
        if (mem == pypto_emu::Memory::UB && used > pypto_emu::block.ub_peak) {
            pypto_emu::block.ub_peak = used;
        }
        return start;
    }

    // Every buffer counts towards the 64 of a kernel; queue buffers also
    // hold one of the 8 hardware events of their position.
    void count_buffers(TPosition pos, uint32_t num, bool queued)
    {
        buffers_ += num;
        if (buffers_ > 64) {
            pypto_emu::fail("TPipe::InitBuffer: more than 64 buffers in one kernel");
        }
        if (!queued) {
            return;
        }
        uint32_t& n = per_position_[static_cast<int>(pos)];
        n += num;
        if (n > 8) {
            pypto_emu::fail("TPipe::InitBuffer: more than 8 buffers at position ",
                            pypto_emu::position_name(pos),
                            "; each holds a hardware event and there are 8 per position");
        }
    }

    uint8_t events_[64] = {}; // a bit per event ID held by AllocEventID, per HardEvent
    uint32_t used_[static_cast<int>(pypto_emu::Memory::COUNT)] = {};
    uint32_t per_position_[static_cast<int>(TPosition::MAX) + 1] = {};
    uint32_t buffers_ = 0;
    bool alive_ = false;
};

template <TPosition pos, uint32_t bufIDSize>
void TBufPool<pos, bufIDSize>::count_buffers(TPosition p, uint32_t num, bool queued)
{
    if (pipe_ == nullptr || pypto_emu::block.pipe != pipe_) {
        pypto_emu::fail("TBufPool::InitBuffer: the TPipe that made the pool is gone");
    }
    pipe_->count_buffers(p, num, queued);
}

template <int32_t depth>
void QueueOps<depth>::FreeAllEvent()
{
    static_assert(depth != 0, "TQue::FreeAllEvent is not supported for in-place queues (depth 0)");
    require_init("FreeAllEvent");
    uint32_t busy = 0;
    for (const pypto_emu::Slot& s : slots_) {
        busy += s.state != pypto_emu::Slot::State::Free ? 1 : 0;
    }
    if (busy != 0) {
        pypto_emu::fail("TQue<", name(), ">::FreeAllEvent: ", busy, " of its buffers are still allocated or queued; "
                        "FreeTensor them first");
    }
    if (pipe_ != nullptr && pypto_emu::block.pipe == pipe_) {
        uint32_t& n = pipe_->per_position_[static_cast<int>(position_)];
        n -= static_cast<uint32_t>(slots_.size()) <= n ? static_cast<uint32_t>(slots_.size()) : n;
    }
    events_freed_ = true;
}

} // namespace AscendC
