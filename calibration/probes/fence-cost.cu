// What a system-scope fence costs after posted writes, by where the writes
// went: a microbenchmark for contend's fence model (issue 38), run on one
// lent GPU. One warp loops: each lane stores 16 B (a 512 B line per warp) to
// the target, then the warp fences (__threadfence_system, membar.sys), N
// times; the kernel is timed with CUDA events and the time per iteration is
// reported. Targets: nothing (fence alone), the GPU's own memory, pinned
// host memory mapped into the GPU (the path through the root complex).
// Variants: stores per fence (1, 8 lines), and no fence (the stores alone).
//
// Build and run: nvcc -O3 -arch=native -o fence-cost fence-cost.cu && ./fence-cost OUT.jsonl
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void loop(int4* dst, int iters, int lines, int fence) {
  int4 v = make_int4(threadIdx.x, 1, 2, 3);
  for (int i = 0; i < iters; i++) {
    if (dst) {
      for (int l = 0; l < lines; l++) {
        // volatile 16-byte stores: every one goes out, none merged across iterations
        int4* q = dst + ((l * 32 + threadIdx.x) & 4095);
        asm volatile("st.volatile.global.v4.s32 [%0], {%1, %2, %3, %4};"
                     :: "l"(q), "r"(v.x + i), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
      }
    }
    if (fence) __threadfence_system();
  }
}

// One thread reads the target with dependent volatile loads: its round trip.
__global__ void chase(const int* src, int iters, int* sink) {
  int j = 0;
  for (int i = 0; i < iters; i++) j = ((volatile const int*)src)[(j + i * 64) & 16383] & 1;
  *sink = j;
}

int main(int argc, char** argv) {
  const char* out = argc > 1 ? argv[1] : "fence-cost.jsonl";
  FILE* f = fopen(out, "w");
  if (!f) { perror(out); return 1; }
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop; CHECK(cudaGetDeviceProperties(&prop, 0));
  int4* local; CHECK(cudaMalloc(&local, 4096 * sizeof(int4)));
  int4* hostp; CHECK(cudaHostAlloc(&hostp, 4096 * sizeof(int4), cudaHostAllocMapped));
  int4* host; CHECK(cudaHostGetDevicePointer(&host, hostp, 0));
  cudaEvent_t a, b; CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
  struct T { const char* name; int4* p; };
  T targets[] = {{"none", nullptr}, {"local", local}, {"host", host}};
  const int iters = 20000, repeats = 15;
  for (auto& t : targets) {
    for (int lines : {1, 8}) {
      if (!t.p && lines > 1) continue;
      for (int fence : {1, 0}) {
        if (!t.p && !fence) continue;
        std::vector<double> per;
        loop<<<1, 32>>>(t.p, 100, lines, fence);  // warm-up
        CHECK(cudaDeviceSynchronize());
        for (int r = 0; r < repeats; r++) {
          CHECK(cudaEventRecord(a));
          loop<<<1, 32>>>(t.p, iters, lines, fence);
          CHECK(cudaEventRecord(b));
          CHECK(cudaEventSynchronize(b));
          float ms; CHECK(cudaEventElapsedTime(&ms, a, b));
          per.push_back(ms * 1e6 / iters);
        }
        std::vector<double> s = per; std::sort(s.begin(), s.end());
        double med = s[s.size() / 2];
        fprintf(f, "{\"probe\":\"fence-cost\",\"target\":\"%s\",\"lines_per_fence\":%d,\"fence\":%s,"
                   "\"iters\":%d,\"gpu\":\"%s\",\"median_ns_per_iter\":%.2f,\"per_repeat_ns_per_iter\":[",
                t.name, t.p ? lines : 0, fence ? "true" : "false", iters, prop.name, med);
        for (size_t i = 0; i < per.size(); i++) fprintf(f, "%s%.2f", i ? "," : "", per[i]);
        fprintf(f, "]}\n");
        printf("%-5s lines %d fence %d: %.1f ns per iteration\n", t.name, t.p ? lines : 0, fence, med);
      }
    }
  }
  // read round trips, for comparison with the fences
  int* sink; CHECK(cudaMalloc(&sink, sizeof(int)));
  CHECK(cudaMemset(local, 0, 4096 * sizeof(int4)));
  memset(hostp, 0, 4096 * sizeof(int4));
  for (auto& t : targets) {
    if (!t.p) continue;
    std::vector<double> per;
    chase<<<1, 1>>>((const int*)t.p, 100, sink);
    CHECK(cudaDeviceSynchronize());
    for (int r = 0; r < repeats; r++) {
      CHECK(cudaEventRecord(a));
      chase<<<1, 1>>>((const int*)t.p, iters / 4, sink);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float ms; CHECK(cudaEventElapsedTime(&ms, a, b));
      per.push_back(ms * 1e6 / (iters / 4));
    }
    std::vector<double> s = per; std::sort(s.begin(), s.end());
    fprintf(f, "{\"probe\":\"read-round-trip\",\"target\":\"%s\",\"iters\":%d,\"gpu\":\"%s\",\"median_ns_per_iter\":%.2f,\"per_repeat_ns_per_iter\":[",
            t.name, iters / 4, prop.name, s[s.size() / 2]);
    for (size_t i = 0; i < per.size(); i++) fprintf(f, "%s%.2f", i ? "," : "", per[i]);
    fprintf(f, "]}\n");
    printf("read round trip %-5s: %.1f ns\n", t.name, s[s.size() / 2]);
  }
  fclose(f);
  return 0;
}
