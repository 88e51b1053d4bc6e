// Comm pieces that do not need MPI: chunking, string broadcast, LocalComm and the launcher guess.
#include "core/dist/comm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/dist/mpi_comm.h"
#include "core/util/check.h"

namespace attnlab::dist {

std::vector<Chunk> split_into_chunks(size_t total, size_t max_count) {
  CHECK(max_count > 0) << "split_into_chunks: max_count must be positive";
  std::vector<Chunk> chunks;
  chunks.reserve(total / max_count + 1);
  for (size_t offset = 0; offset < total; offset += max_count) {
    chunks.push_back({offset, std::min(max_count, total - offset)});
  }
  return chunks;
}

void Comm::broadcast_string(std::string& text, int root) {
  int64_t length = static_cast<int64_t>(text.size());
  broadcast(&length, 1, root);
  CHECK(length >= 0) << "broadcast_string: root sent a negative length " << length;
  text.resize(static_cast<size_t>(length));
  broadcast_bytes(text.data(), text.size(), root);
}

namespace {

void check_local_root(int root) {
  CHECK(root == 0) << "broadcast root " << root << " does not exist in a single-process run";
}

}  // namespace

void LocalComm::allreduce_sum(float*, size_t) {}
void LocalComm::allreduce_sum(double*, size_t) {}
void LocalComm::allreduce_sum(int64_t*, size_t) {}

void LocalComm::broadcast(float*, size_t, int root) { check_local_root(root); }
void LocalComm::broadcast(double*, size_t, int root) { check_local_root(root); }
void LocalComm::broadcast(int64_t*, size_t, int root) { check_local_root(root); }
void LocalComm::broadcast_bytes(void*, size_t, int root) { check_local_root(root); }

void LocalComm::abort(int code, const std::string& message) {
  std::fprintf(stderr, "attnlab: %s\n", message.c_str());
  std::fflush(nullptr);
  // _Exit, not exit: abort() may run inside std::terminate, where static destructors are unsafe.
  std::_Exit(code);
}

namespace {

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0';
}

}  // namespace

bool launched_by_mpi() {
  if (const char* forced = std::getenv("ATTNLAB_COMM"); forced != nullptr && forced[0] != '\0') {
    const std::string choice(forced);
    CHECK(choice == "local" || choice == "mpi")
        << "ATTNLAB_COMM must be 'local' or 'mpi', got '" << choice << "'";
    return choice == "mpi";
  }
  // Open MPI's mpirun, any PMIx launcher (Open MPI 5, prrte, srun --mpi=pmix), MPICH's Hydra
  // (PMI_RANK) and Slurm's srun.
  for (const char* name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID"}) {
    if (env_set(name)) return true;
  }
  return false;
}

std::unique_ptr<Comm> make_comm() {
  if (launched_by_mpi()) return std::make_unique<MpiComm>();
  return std::make_unique<LocalComm>();
}

}  // namespace attnlab::dist
