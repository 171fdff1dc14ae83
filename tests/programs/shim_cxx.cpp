/*
 * C++ allocation through operator new / new[] / delete / delete[], with
 * sizes no other code in this program uses:
 *   - 1000 x `new Obj` (sizeof(Obj) == 3000), all deleted;
 *   - 500 x `new char[7001]`, all delete[]d;
 *   - 200 x `new std::array<double, 999>` (7992 bytes), 150 deleted, 50 kept
 *     until exit (still live at exit);
 *   - one std::vector<int> grown by push_back to 100000 elements, then
 *     destroyed: its buffer sizes are 4 << k bytes for k = 0..17 (1, 2, 4, ...
 *     131072 ints), each freed when the next is allocated.
 * Expected under the shim (tests/integration/shim_cxx.sh): exactly those
 * ALLOC records (operator new calls malloc: fn=malloc), the matching FREE
 * records, 50 blocks of 7992 bytes live at exit; exit status 0.
 */
#include <array>
#include <cstdio>
#include <vector>

struct Obj {
    char data[3000];
};

static std::array<double, 999> *kept[50];

int main()
{
    for (int i = 0; i < 1000; i++) {
        Obj *volatile o = new Obj;
        o->data[0] = (char)i;
        delete o;
    }
    for (int i = 0; i < 500; i++) {
        char *volatile c = new char[7001];
        c[7000] = 1;
        delete[] c;
    }
    for (int i = 0; i < 200; i++) {
        auto *volatile a = new std::array<double, 999>;
        (*a)[0] = i;
        if (i < 150)
            delete a;
        else
            kept[i - 150] = a;
    }
    {
        std::vector<int> v;
        for (int i = 0; i < 100000; i++)
            v.push_back(i);
        std::printf("vector capacity %zu\n", v.capacity());
    }
    std::printf("kept %p\n", (void *)kept[49]);
    return 0;
}
