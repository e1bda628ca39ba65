// cudaGraphInstantiate, cudaGraphLaunch, cudaGraphGetNodes, cudaGraphExecDestroy and
// cudaGraphDestroy of the sim device (graphs.h).
#include "sim/cuda/graphs.h"

#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "sim/cuda/errors.h"
#include "sim/cuda/happens_before.h"

// CUDA's headers declare cudaGraph_t and cudaGraphExec_t as pointers to these; the runtime
// defines them. An instantiated graph shares the tasks with its graph: either may go first.
struct CUgraph_st {
  std::shared_ptr<const engine::sim::CapturedTasks> tasks;
};
struct CUgraphExec_st {
  std::shared_ptr<const engine::sim::CapturedTasks> tasks;
};

namespace engine::sim {
namespace {

struct Registry {
  std::mutex mutex;
  std::set<cudaGraph_t> graphs;
  std::set<cudaGraphExec_t> executables;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

template <typename Handle>
bool is_live(const std::set<Handle>& live, Handle handle) {
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  return live.contains(handle);
}

// Takes `handle` out of `live` and deletes it; false when it was not live.
template <typename Handle>
bool destroy(std::set<Handle>& live, Handle handle) {
  {
    Registry& r = registry();
    const BookkeepingLock lock(r.mutex);
    if (live.erase(handle) == 0) return false;
  }
  // Unobserved, as cudaEventDestroy: a launch still queued holds the tasks, and its worker
  // drops them unobserved (happens_before.h).
  const Unobserved quiet;
  delete handle;
  return true;
}

}  // namespace

cudaGraph_t new_graph(std::shared_ptr<const CapturedTasks> tasks) {
  auto* graph = new CUgraph_st{std::move(tasks)};
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  r.graphs.insert(graph);
  return graph;
}

}  // namespace engine::sim

using engine::sim::result;
using engine::sim::sticky_error;

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (pGraphExec == nullptr) return result(cudaErrorInvalidValue);
  if (flags != 0) {
    explain("cudaGraphInstantiate: flags other than 0 are not emulated");
    return result(cudaErrorNotSupported);
  }
  Registry& r = registry();
  const BookkeepingLock lock(r.mutex);
  if (!r.graphs.contains(graph)) return result(cudaErrorInvalidValue);
  auto* executable = new CUgraphExec_st{graph->tasks};
  r.executables.insert(executable);
  *pGraphExec = executable;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (!is_live(registry().executables, graphExec)) return result(cudaErrorInvalidValue);
  if (const cudaError_t status = check_stream(stream)) return result(status);
  if (is_capturing(stream)) {
    explain("cudaGraphLaunch into a capture (a child graph) is not emulated");
    return result(cudaErrorNotSupported);
  }
  // Nodes issued at launch take their places now, on this thread, in node order. (Should the
  // enqueue below fail, their turns are taken and never run: it fails only on a faulted device,
  // which runs nothing more anyway.)
  std::vector<StreamTask> issued;
  for (const CapturedNode& node : *graphExec->tasks) {
    if (node.issue) issued.push_back(node.issue());
  }
  return result(enqueue(stream, [tasks = graphExec->tasks, issued = std::move(issued)] {
    size_t next_issued = 0;
    for (const CapturedNode& node : *tasks) {
      if (sticky_error() != cudaSuccess) return;  // a faulted device runs nothing more
      if (node.issue) {
        issued[next_issued++]();
      } else {
        node.task();
      }
    }
  }));
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  using namespace engine::sim;
  if (const cudaError_t sticky = sticky_error()) return sticky;
  if (numNodes == nullptr || !is_live(registry().graphs, graph)) {
    return result(cudaErrorInvalidValue);
  }
  if (nodes != nullptr) {
    explain("cudaGraphGetNodes: node handles are not emulated (pass nullptr to count them)");
    return result(cudaErrorNotSupported);
  }
  *numNodes = graph->tasks->size();
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  using namespace engine::sim;
  return destroy(registry().executables, graphExec) ? cudaSuccess : result(cudaErrorInvalidValue);
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  using namespace engine::sim;
  return destroy(registry().graphs, graph) ? cudaSuccess : result(cudaErrorInvalidValue);
}
