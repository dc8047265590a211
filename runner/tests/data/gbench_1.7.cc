#include <benchmark/benchmark.h>
#include <cstring>
#include <vector>
static void BM_Baseline_Memcpy(benchmark::State& s){ std::vector<char> a(s.range(0)), b(s.range(0)); for(auto _: s){ memcpy(b.data(), a.data(), a.size()); benchmark::DoNotOptimize(b.data()); } s.SetBytesProcessed(s.iterations()*s.range(0)); s.SetItemsProcessed(s.iterations()); }
BENCHMARK(BM_Baseline_Memcpy)->Arg(64)->Arg(4096);
static void BM_Copy(benchmark::State& s){ std::vector<char> a(s.range(0)), b(s.range(0)); for(auto _: s){ for(size_t i=0;i<a.size();++i) b[i]=a[i]; benchmark::DoNotOptimize(b.data()); } s.SetBytesProcessed(s.iterations()*s.range(0)); }
BENCHMARK(BM_Copy)->Arg(64)->Arg(4096);
static void BM_Err(benchmark::State& s){ for(auto _: s){ s.SkipWithError("no perf here"); break; } }
BENCHMARK(BM_Err);
BENCHMARK_MAIN();
