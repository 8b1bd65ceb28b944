// Memories, tensors and the buffer manager: TPosition, GlobalTensor,
// LocalTensor, TPipe, TQue, TQueBind, TBuf. Enforced: capacity per memory,
// 32-byte placement of Unified Buffer tensors, buffer-count limits, queue
// misuse (AllocTensor with no free buffer, EnQue into a full queue, DeQue of
// an empty queue, FreeTensor twice), and bounds of every element access.
#pragma once

#include <deque>
#include <memory>

#include "core.h"
#include "types.h"

namespace AscendC {

enum class TPosition : uint8_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC,
    LCM = VECCALC, SPM, SHM = SPM, TSCM, C2PIPE2GM, C2PIPE2LOCAL, MAX
};
using QuePosition = TPosition;

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

using AscendC::TPosition;

enum class Memory : uint8_t { GM, UB, L1, L0A, L0B, L0C, BT, FB, COUNT };

struct MemorySpec {
    const char* name;
    uint32_t capacity; // bytes on the chip
    uint32_t usable;   // bytes a kernel's buffers may take
    uint32_t align;    // start-address alignment, bytes
    const char* why;   // what the difference between capacity and usable is
};

// Atlas A2/A3 (NPU architecture 2201) unless PYPTO_TARGET_950 is defined.
inline const MemorySpec& memory_spec(Memory m)
{
#if defined(PYPTO_TARGET_950)
    static const MemorySpec specs[] = {
        {"global memory", 0, 0, 1, ""},
        {"Unified Buffer", 256 * 1024, 248 * 1024, 32, "256 KiB less the 6 KiB stack and 2 KiB API reserves"},
        {"L1 buffer", 512 * 1024, 512 * 1024, 32, ""},
        {"L0A buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0B buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0C buffer", 256 * 1024, 256 * 1024, 64, ""},
        {"BiasTable", 4 * 1024, 4 * 1024, 64, ""},
        {"Fixpipe buffer", 4 * 1024, 4 * 1024, 64, ""},
    };
#else
    static const MemorySpec specs[] = {
        {"global memory", 0, 0, 1, ""},
        {"Unified Buffer", 192 * 1024, 192 * 1024 - 256 - 8 * 1024, 32,
         "192 KiB less the 256 B framework and 8 KiB API reserves"},
        {"L1 buffer", 512 * 1024, 512 * 1024 - 256, 32, "512 KiB less the 256 B framework reserve"},
        {"L0A buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0B buffer", 64 * 1024, 64 * 1024, 512, ""},
        {"L0C buffer", 128 * 1024, 128 * 1024, 64, ""},
        {"BiasTable", 1024, 1024, 64, ""},
        {"Fixpipe buffer", 2 * 1024, 2 * 1024, 64, ""},
    };
#endif
    return specs[static_cast<int>(m)];
}

constexpr Memory memory_of(TPosition p)
{
    switch (p) {
    case TPosition::VECIN: case TPosition::VECOUT: case TPosition::VECCALC:
        return Memory::UB;
    case TPosition::A1: case TPosition::B1: case TPosition::C1: case TPosition::TSCM:
        return Memory::L1;
    case TPosition::A2: return Memory::L0A;
    case TPosition::B2: return Memory::L0B;
    case TPosition::CO1: return Memory::L0C;
    case TPosition::C2: return Memory::BT;
    case TPosition::C2PIPE2GM: return Memory::FB;
    default: return Memory::GM;
    }
}

inline const char* position_name(TPosition p)
{
    static const char* names[] = {"GM", "A1", "A2", "B1", "B2", "C1", "C2", "CO1", "CO2",
                                  "VECIN", "VECOUT", "VECCALC", "SPM", "TSCM", "C2PIPE2GM",
                                  "C2PIPE2LOCAL", "MAX"};
    return names[static_cast<int>(p)];
}

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

// Packed 4-bit integers have no tensor support yet (see README, gaps).
template <typename T>
constexpr bool tensor_element_ok = !std::is_same_v<T, int4b_t>;

// One buffer of a queue, and where its tensor is in the queue protocol.
struct Slot {
    enum class State { Free, Allocated, Queued, Dequeued };
    uint8_t* data = nullptr;
    uint32_t bytes = 0;
    State state = State::Free;
};

} // namespace pypto_emu

namespace AscendC {

template <typename T>
class GlobalTensor {
    static_assert(pypto_emu::tensor_element_ok<T>,
                  "GlobalTensor<int4b_t>: packed 4-bit tensors are not emulated yet");

public:
    using PrimType = T;

    // No L2 cache on the host: the hint changes nothing.
    template <CacheRwMode rwMode = CacheRwMode::RW>
    void SetL2CacheHint(CacheMode mode)
    {
        (void)mode;
    }

    GlobalTensor() = default;

    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize)
    {
        pypto_emu::check_gm(buffer, bufferSize * sizeof(T), "GlobalTensor::SetGlobalBuffer");
        data_ = buffer;
        size_ = bufferSize;
        launch_ = pypto_emu::block.launch_id;
    }

    void SetGlobalBuffer(__gm__ T* buffer)
    {
        data_ = buffer;
        size_ = 0;
        launch_ = pypto_emu::block.launch_id;
    }

    T GetValue(uint64_t offset) const
    {
        check(offset, 1, "GlobalTensor::GetValue", false);
        return data_[offset];
    }

    void SetValue(uint64_t offset, T value) const
    {
        check(offset, 1, "GlobalTensor::SetValue", true);
        data_[offset] = value;
    }

    // One element through operator(): reading it is a read, assigning to
    // it a write, so that a write to an input is caught like SetValue's.
    class Element {
    public:
        operator T() const
        {
            owner_->check(offset_, 1, "GlobalTensor::operator()", false);
            return owner_->data_[offset_];
        }
        const Element& operator=(T value) const
        {
            owner_->check(offset_, 1, "GlobalTensor::operator()", true);
            owner_->data_[offset_] = value;
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
        GlobalTensor view;
        view.data_ = data_ + offset;
        view.size_ = size_ != 0 ? size_ - offset : 0;
        view.launch_ = launch_;
        return view;
    }

    uint64_t GetSize() const { return size_; }
    const __gm__ T* GetPhyAddr() const { return data_; }
    __gm__ T* GetPhyAddr(uint64_t offset) const { return data_ + offset; }

    // For the emulation's copies: checks [offset, offset + count) and
    // returns its address; `range` for reading, `range_out` for writing.
    const T* range(uint64_t offset, uint64_t count, const char* what) const
    {
        check(offset, count, what, false);
        return data_ + offset;
    }

    T* range_out(uint64_t offset, uint64_t count, const char* what) const
    {
        check(offset, count, what, true);
        return data_ + offset;
    }

private:
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
        pypto_emu::check_gm(data_ + offset, count * sizeof(T), what, write);
    }

    T* data_ = nullptr;
    uint64_t size_ = 0;
    uint64_t launch_ = 0; // the launch whose memory data_ points into
};

template <typename T>
class LocalTensor {
    static_assert(pypto_emu::tensor_element_ok<T>,
                  "LocalTensor<int4b_t>: packed 4-bit tensors are not emulated yet");

public:
    using PrimType = T;

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
        uint64_t end = addr + static_cast<uint64_t>(tileSize) * sizeof(T);
        if (end > spec.capacity) {
            pypto_emu::fail("LocalTensor(", name, ", ", addr, ", ", tileSize, "): ", tileSize,
                            " elements of ", sizeof(T), " bytes at address ", addr, " end at byte ",
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

    LocalTensor operator[](uint32_t offset) const
    {
        if (offset > size_) {
            pypto_emu::fail("LocalTensor::operator[]: offset ", offset, " is past the tensor's ",
                            size_, " elements");
        }
        LocalTensor view = *this;
        view.data_ = data_ + offset;
        view.offset_bytes_ = offset_bytes_ + offset * static_cast<uint32_t>(sizeof(T));
        view.size_ = size_ - offset;
        view.slot_ = nullptr;
        return view;
    }

    T GetValue(uint32_t index) const
    {
        check_index(index, "LocalTensor::GetValue");
        return data_[index];
    }

    template <typename V>
    void SetValue(uint32_t index, V value) const
    {
        check_index(index, "LocalTensor::SetValue");
        data_[index] = static_cast<T>(value);
    }

    T& operator()(uint32_t index) const
    {
        check_index(index, "LocalTensor::operator()");
        return data_[index];
    }

    uint32_t GetSize() const { return size_; }
    void SetSize(uint32_t size) { size_ = size; }
    uint32_t GetLength() const { return size_ * static_cast<uint32_t>(sizeof(T)); }
    T* GetPhyAddr() const { return data_; }
    T* GetPhyAddr(uint32_t offset) const { return data_ + offset; }
    int32_t GetPosition() const { return static_cast<int32_t>(position_); }

    template <typename U>
    LocalTensor<U> ReinterpretCast() const
    {
        LocalTensor<U> other;
        other.data_ = reinterpret_cast<U*>(data_);
        other.size_ = static_cast<uint32_t>(size_ * sizeof(T) / sizeof(U));
        other.offset_bytes_ = offset_bytes_;
        other.position_ = position_;
        other.slot_ = nullptr;
        return other;
    }

    // ---- emulation internals ----------------------------------------------
    static LocalTensor make(uint8_t* data, uint32_t bytes, uint32_t offset_bytes, TPosition pos,
                            pypto_emu::Slot* slot)
    {
        LocalTensor t;
        t.data_ = reinterpret_cast<T*>(data);
        t.size_ = bytes / static_cast<uint32_t>(sizeof(T));
        t.offset_bytes_ = offset_bytes;
        t.position_ = pos;
        t.slot_ = slot;
        return t;
    }
    uint32_t offset_bytes() const { return offset_bytes_; }
    TPosition position() const { return position_; }
    pypto_emu::Slot* slot() const { return slot_; }
    T* data() const { return data_; }

private:
    template <typename U>
    friend class LocalTensor;

    void check_index(uint32_t index, const char* what) const
    {
        pypto_emu::poll(what);
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
};

class TPipe;

// A queue of buffers between pipeline stages.
class QueueBase {
public:
    template <typename T>
    LocalTensor<T> AllocTensor()
    {
        pypto_emu::poll("TQue::AllocTensor");
        require_init("AllocTensor");
        for (pypto_emu::Slot& s : slots_) {
            if (s.state == pypto_emu::Slot::State::Free) {
                s.state = pypto_emu::Slot::State::Allocated;
                return LocalTensor<T>::make(s.data, s.bytes, offset_of(s), position_, &s);
            }
        }
        pypto_emu::fail("TQue<", pypto_emu::position_name(position_), ">::AllocTensor: all ",
                        slots_.size(), " buffers are in use; FreeTensor one first (on the NPU "
                        "this call would wait forever)");
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor)
    {
        require_init("EnQue");
        pypto_emu::Slot* s = owned_slot(tensor, "EnQue");
        if (s->state != pypto_emu::Slot::State::Allocated &&
            s->state != pypto_emu::Slot::State::Dequeued) {
            pypto_emu::fail("TQue<", pypto_emu::position_name(position_),
                            ">::EnQue: the tensor is already in the queue");
        }
        if (static_cast<int32_t>(fifo_.size()) >= depth_) {
            pypto_emu::fail("TQue<", pypto_emu::position_name(position_), ">::EnQue: the queue "
                            "is full (depth ", depth_, "); DeQue before enqueuing again");
        }
        s->state = pypto_emu::Slot::State::Queued;
        fifo_.push_back(s);
        return true;
    }

    template <typename T>
    LocalTensor<T> DeQue()
    {
        pypto_emu::poll("TQue::DeQue");
        require_init("DeQue");
        if (fifo_.empty()) {
            pypto_emu::fail("TQue<", pypto_emu::position_name(position_),
                            ">::DeQue: the queue is empty; EnQue a tensor first");
        }
        pypto_emu::Slot* s = fifo_.front();
        fifo_.pop_front();
        s->state = pypto_emu::Slot::State::Dequeued;
        return LocalTensor<T>::make(s->data, s->bytes, offset_of(*s), position_, s);
    }

    template <typename T>
    void FreeTensor(LocalTensor<T>& tensor)
    {
        require_init("FreeTensor");
        pypto_emu::Slot* s = owned_slot(tensor, "FreeTensor");
        switch (s->state) {
        case pypto_emu::Slot::State::Free:
            pypto_emu::fail("TQue<", pypto_emu::position_name(position_),
                            ">::FreeTensor: the buffer is already free (freed twice)");
        case pypto_emu::Slot::State::Queued:
            pypto_emu::fail("TQue<", pypto_emu::position_name(position_),
                            ">::FreeTensor: the tensor is still in the queue; DeQue it first");
        default:
            s->state = pypto_emu::Slot::State::Free;
        }
    }

    bool VacantInQue() const { return static_cast<int32_t>(fifo_.size()) < depth_; }
    bool HasTensorInQue() const { return !fifo_.empty(); }
    int32_t GetTensorCountInQue() const { return static_cast<int32_t>(fifo_.size()); }
    bool HasIdleBuffer() const
    {
        for (const pypto_emu::Slot& s : slots_) {
            if (s.state == pypto_emu::Slot::State::Free) {
                return true;
            }
        }
        return false;
    }

protected:
    QueueBase(TPosition position, int32_t depth) : position_(position), depth_(depth)
    {
        if (depth <= 0) {
            pypto_emu::fail("TQue depth ", depth, " (in-place queues) is not emulated");
        }
    }

private:
    friend class TPipe;

    void require_init(const char* what) const
    {
        if (slots_.empty()) {
            pypto_emu::fail("TQue<", pypto_emu::position_name(position_), ">::", what,
                            ": the queue has no buffers; call TPipe::InitBuffer first");
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
        pypto_emu::fail("TQue<", pypto_emu::position_name(position_), ">::", what,
                        ": the tensor was not allocated from this queue (or is a view made "
                        "with operator[])");
    }

    uint32_t offset_of(const pypto_emu::Slot& s) const
    {
        return base_offset_ + static_cast<uint32_t>(s.data - slots_.front().data);
    }

    TPosition position_;
    int32_t depth_;
    std::vector<pypto_emu::Slot> slots_;
    std::deque<pypto_emu::Slot*> fifo_;
    uint32_t base_offset_ = 0;
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public QueueBase {
public:
    TQue() : QueueBase(pos, depth) {}
};

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind : public QueueBase {
public:
    TQueBind() : QueueBase(src == TPosition::GM ? dst : src, depth) {}
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

    template <typename T>
    LocalTensor<T> Get(uint32_t len) const
    {
        require_init("Get");
        if (static_cast<uint64_t>(len) * sizeof(T) > bytes_) {
            pypto_emu::fail("TBuf::Get: ", len, " elements (", len * sizeof(T),
                            " bytes) exceed the buffer's ", bytes_, " bytes");
        }
        return LocalTensor<T>::make(data_, static_cast<uint32_t>(len * sizeof(T)), offset_, pos,
                                    nullptr);
    }

    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) const
    {
        require_init("GetWithOffset");
        if (bufOffset % 32 != 0) {
            pypto_emu::fail("TBuf::GetWithOffset: byte offset ", bufOffset,
                            " is not a multiple of 32");
        }
        if (static_cast<uint64_t>(size) * sizeof(T) + bufOffset > bytes_) {
            pypto_emu::fail("TBuf::GetWithOffset: ", size, " elements at byte ", bufOffset,
                            " exceed the buffer's ", bytes_, " bytes");
        }
        return LocalTensor<T>::make(data_ + bufOffset, static_cast<uint32_t>(size * sizeof(T)),
                                    offset_ + bufOffset, pos, nullptr);
    }

private:
    friend class TPipe;

    void require_init(const char* what) const
    {
        if (data_ == nullptr) {
            pypto_emu::fail("TBuf<", pypto_emu::position_name(pos), ">::", what,
                            ": the buffer has no memory; call TPipe::InitBuffer first");
        }
    }

    uint8_t* data_ = nullptr;
    uint32_t bytes_ = 0;
    uint32_t offset_ = 0;
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
    }

    ~TPipe()
    {
        if (alive_) {
            --pypto_emu::block.live_pipes;
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
        if (!que.slots_.empty()) {
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
        que.slots_.resize(num);
        for (uint8_t i = 0; i < num; ++i) {
            que.slots_[i].data = base(mem) + offset + i * bytes;
            que.slots_[i].bytes = bytes;
        }
        que.base_offset_ = offset;
        return true;
    }

    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t len)
    {
        if (buf.data_ != nullptr) {
            pypto_emu::fail("TPipe::InitBuffer: the TBuf already has memory; Reset the pipe first");
        }
        if (len == 0) {
            pypto_emu::fail("TPipe::InitBuffer: a TBuf of 0 bytes");
        }
        pypto_emu::Memory mem = pypto_emu::memory_of(pos);
        count_buffers(pos, 1, false);
        uint32_t bytes = round_up(len, 32);
        uint32_t offset = allocate(mem, bytes, 1, bytes);
        buf.data_ = base(mem) + offset;
        buf.bytes_ = bytes;
        buf.offset_ = offset;
        return true;
    }

    // Releases every buffer; queues and TBufs must be initialised again.
    void Reset()
    {
        for (auto& used : used_) {
            used = 0;
        }
        buffers_ = 0;
        for (auto& n : per_position_) {
            n = 0;
        }
    }

    void Destroy()
    {
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

private:
    static uint32_t round_up(uint32_t n, uint32_t to) { return (n + to - 1) / to * to; }

    uint8_t* base(pypto_emu::Memory mem) { return pypto_emu::arena(mem); }

    uint32_t allocate(pypto_emu::Memory mem, uint64_t total, uint32_t num, uint32_t each)
    {
        const auto& spec = pypto_emu::memory_spec(mem);
        if (mem == pypto_emu::Memory::GM) {
            pypto_emu::fail("TPipe::InitBuffer: the position is in global memory, not on chip");
        }
        uint32_t& used = used_[static_cast<int>(mem)];
        uint32_t start = round_up(used, spec.align);
        if (start + total > spec.usable) {
            pypto_emu::fail("TPipe::InitBuffer: ", num, " buffer", num == 1 ? "" : "s", " of ",
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

} // namespace AscendC
