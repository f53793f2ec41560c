// Pinocchio's side of robot-model's side-by-side benchmark (robot-model/tools/side_by_side.sh):
// the median time of one CRBA (pinocchio::crba, in its default LOCAL convention and in the WORLD
// one) and one RNEA (pinocchio::rnea) call, each including its own forward kinematics pass, as
// control_core::tree::Tree's `kinematics` + `mass_matrix_into` and `kinematics` +
// `inverse_dynamics` are timed in robot-model/benches/tree.rs; and the forward kinematics alone
// (pinocchio::forwardKinematics, positions only), as `kinematics` is.
//
// Built and run by robot-model/tools/pinocchio_bench.sh, which also prepares its inputs: the
// model (Pinocchio's own URDF parser, run from Python, saved with Model.saveToText) and the
// states (q, v, a of the committed reference robot-model/tests/data/pinocchio/<robot>.json, the
// ones the Rust bench uses too). The model is read back with boost serialization in this
// translation unit so that all of Pinocchio (header-only here: PINOCCHIO_ENABLE_TEMPLATE_
// INSTANTIATION is left undefined) is compiled with this file's flags (-O3 -march=native), and
// no Eigen object crosses into a library built with other flags.
//
// Usage: pinocchio_bench <label> <model.txt> <states.txt> [batches] [calls per batch]
// states.txt: "nq nv count", then per state one line each of q (nq numbers), v, a, and the
// reference's rnea(q, v, a), which the model read back must reproduce (to 1e-12 relative) before
// anything is timed.
// Prints one line per algorithm:
//   pinocchio <label> <algorithm> median_ns <x> min_ns <y> batches <b> calls <c>
// where a batch's figure is the mean over its calls (cycling through the states), and the median
// and minimum are over the batches.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "pinocchio/algorithm/crba.hpp"
#include "pinocchio/algorithm/kinematics.hpp"
#include "pinocchio/algorithm/rnea.hpp"
#include "pinocchio/multibody.hpp"
#include "pinocchio/serialization.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// Keeps the optimiser from dropping a result.
template <typename T>
inline void keep(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

struct Stats {
  double median_ns;
  double min_ns;
};

template <typename F>
Stats time_batches(int batches, int calls, F&& call) {
  // Warm-up: one batch untimed.
  for (int i = 0; i < calls; ++i) call(i);
  std::vector<double> means;
  means.reserve(batches);
  for (int b = 0; b < batches; ++b) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) call(i);
    const auto t1 = Clock::now();
    means.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
  }
  std::sort(means.begin(), means.end());
  const std::size_t n = means.size();
  const double median = n % 2 ? means[n / 2] : 0.5 * (means[n / 2 - 1] + means[n / 2]);
  return {median, means.front()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s <label> <model.txt> <states.txt> [batches] [calls]\n", argv[0]);
    return 2;
  }
  const std::string label = argv[1];
  const int batches = argc > 4 ? std::atoi(argv[4]) : 200;
  const int calls = argc > 5 ? std::atoi(argv[5]) : 1000;

  pinocchio::Model model;
  model.loadFromText(argv[2]);
  pinocchio::Data data(model);

  std::ifstream in(argv[3]);
  int nq = 0, nv = 0, count = 0;
  in >> nq >> nv >> count;
  if (!in || nq != model.nq || nv != model.nv || count <= 0) {
    std::fprintf(stderr, "%s: states file does not match the model (nq %d/%d, nv %d/%d)\n",
                 label.c_str(), nq, model.nq, nv, model.nv);
    return 1;
  }
  std::vector<Eigen::VectorXd> qs, vs, as;
  for (int s = 0; s < count; ++s) {
    Eigen::VectorXd q(nq), v(nv), a(nv);
    for (int i = 0; i < nq; ++i) in >> q[i];
    for (int i = 0; i < nv; ++i) in >> v[i];
    for (int i = 0; i < nv; ++i) in >> a[i];
    qs.push_back(q);
    vs.push_back(v);
    as.push_back(a);
    Eigen::VectorXd tau(nv);
    for (int i = 0; i < nv; ++i) in >> tau[i];
    if (!in) {
      std::fprintf(stderr, "%s: states file ends early\n", label.c_str());
      return 1;
    }
    // The model read back must give the reference's numbers (the same model, the same state).
    const Eigen::VectorXd& got = pinocchio::rnea(model, data, q, v, a);
    const double err = (got - tau).cwiseAbs().maxCoeff() / tau.cwiseAbs().maxCoeff();
    if (!(err <= 1e-12)) {
      std::fprintf(stderr, "%s: state %d: rnea differs from the reference by %.3g (relative)\n",
                   label.c_str(), s, err);
      return 1;
    }
  }
  const auto n = static_cast<std::size_t>(count);

  const Stats crba_local = time_batches(batches, calls, [&](int i) {
    keep(pinocchio::crba(model, data, qs[i % n], pinocchio::Convention::LOCAL));
  });
  const Stats crba_world = time_batches(batches, calls, [&](int i) {
    keep(pinocchio::crba(model, data, qs[i % n], pinocchio::Convention::WORLD));
  });
  const Stats rnea = time_batches(batches, calls, [&](int i) {
    const std::size_t k = i % n;
    keep(pinocchio::rnea(model, data, qs[k], vs[k], as[k]));
  });

  const Stats fk = time_batches(batches, calls, [&](int i) {
    pinocchio::forwardKinematics(model, data, qs[i % n]);
    keep(data.oMi.back());
  });

  const auto print = [&](const char* algorithm, const Stats& s) {
    std::printf("pinocchio %s %s median_ns %.1f min_ns %.1f batches %d calls %d\n", label.c_str(),
                algorithm, s.median_ns, s.min_ns, batches, calls);
  };
  print("crba", crba_local);
  print("crba_world", crba_world);
  print("rnea", rnea);
  print("kinematics", fk);
  return 0;
}
