/*
 * leak_none_cxx: a C++ control with no leak. std::vector, std::map with long
 * std::string values, std::unordered_map, std::list, std::deque, a
 * std::shared_ptr from make_shared and a std::unique_ptr live in main's
 * frame while gcspy_scan() runs: every block is reachable through start
 * pointers (make_shared's object pointer is interior, but the control block
 * pointer beside it is a start pointer). Then they go out of scope. Neither
 * scan may report a definite, indirect or possible block.
 *
 * @scans api 1
 * @scan api definite=0/0 indirect=0/0 possible=0/0
 * @scans exit 1
 * @scan exit definite=0/0 indirect=0/0 possible=0/0
 */
#include <dlfcn.h>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "leak_case.h"

static __attribute__((noinline)) int work(int (*scan)())
{
    std::vector<int> v(1000, 7);
    std::map<int, std::string> m;
    for (int i = 0; i < 50; i++)
        m[i] = std::string(40 + i, 'a' + i % 26);
    std::unordered_map<std::string, std::vector<double>> u;
    for (int i = 0; i < 30; i++)
        u["key number " + std::to_string(i) + " that is long"] = std::vector<double>(i + 1, 1.5);
    std::list<std::string> l(20, std::string(100, 'z'));
    std::deque<long> d;
    for (long i = 0; i < 3000; i++)
        d.push_back(i);
    auto sp = std::make_shared<std::vector<int>>(300, 1);
    auto up = std::make_unique<std::string>(500, 'q');
    clobber_stack();
    int rc = scan ? scan() : 0;
    __asm__ volatile("" : : "r"(&v), "r"(&m), "r"(&u), "r"(&l), "r"(&d), "r"(&sp), "r"(&up)
                     : "memory");
    return rc;
}

int main()
{
    auto scan = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "gcspy_scan"));
    int rc = work(scan);
    clobber_stack();
    return rc ? 1 : 0;
}
