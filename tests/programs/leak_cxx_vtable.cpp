/*
 * leak_cxx_vtable: a leaked polymorphic C++ object (1008 bytes: vtable
 * pointer, a 992-byte buffer, a member pointer) whose member points at a
 * second heap object (2000 bytes). The first is definitely lost, the second
 * indirectly lost; the vtable pointer (into the executable's read-only data)
 * changes nothing. A second polymorphic object kept by a global Base* is
 * reachable.
 *
 * @scans exit 1
 * @scan exit definite=1/1008 indirect=1/2000 possible=0/0
 * @block exit 1008=definite 2000=indirect 24=reachable
 */
#include <cstring>

#include "leak_case.h"

struct Base {
    virtual ~Base() {}
    virtual int kind() const { return 0; }
};

struct Payload {
    char bytes[2000];
};

struct Leaky : Base {
    char pad[992];
    Payload *payload;
    int kind() const override { return 1; }
};

struct Small : Base {
    long a, b;
    int kind() const override { return 2; }
};

static_assert(sizeof(Leaky) == 1008, "Leaky must be 1008 bytes");
static_assert(sizeof(Payload) == 2000, "Payload must be 2000 bytes");
static_assert(sizeof(Small) == 24, "Small must be 24 bytes");

Base *volatile kept;

static __attribute__((noinline)) void leak()
{
    Leaky *l = new Leaky;
    memset(l->pad, 1, sizeof l->pad);
    l->payload = new Payload;
    memset(l->payload->bytes, 2, sizeof l->payload->bytes);
    Base *b = l;
    __asm__ volatile("" : : "r"(b) : "memory");
    kept = new Small;
}

int main()
{
    leak();
    clobber_stack();
    return kept->kind() == 2 ? 0 : 1;
}
