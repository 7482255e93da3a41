// Bayesian optimisation: a Gaussian process on log(time) with expected improvement.
#pragma once

#include "strategies/strategy_basic.hpp"

#include <Eigen/Dense>

#include <random>
#include <unordered_map>

namespace gt::search {

// Model: a GP with a Matérn-5/2 ARD kernel over the parameters' positions in their ordered
// value lists (normalised to [0, 1]; for power-of-two lists that is a log scale), fitted to
// the normal scores of the times' ranks (GEMM times have a long tail of slow configs; on a
// time or log-time scale that tail sets the model's scale and the few-percent differences
// near the optimum drown). Its length scales, signal and noise variances maximise the
// marginal likelihood (with weak priors), refitted as data grows.
//
// Failed configs are observations too: they score as the slowest success, with extra
// noise, so the model learns to avoid a failing region without one sporadic failure
// flattening a good one.
//
// Proposal: after a few random configs, the unseen candidate with the highest expected
// improvement over the best time measured. The improvement is that of the candidate's
// measurement, not of the smooth model: each config is measured once and carries its own
// offset from the trend (how well the compiler scheduled it, noise), which the fitted noise
// variance holds, so near-optimal regions are sampled densely. Candidates are every unseen valid point where there are few enough, else a
// random sample plus neighbours and mutations of the best configs. A batch -- and proposals
// still awaiting results -- are handled by the kriging believer: a pending config counts as
// observed at the model's mean, which leaves the mean alone and shrinks the variance near it,
// so a batch spreads out instead of piling onto one spot.
class BayesOpt : public Strategy {
 public:
  BayesOpt(const Space& space, uint64_t seed, std::vector<Config> first);
  std::string name() const override { return "bayes"; }
  std::vector<Config> propose(size_t max) override;
  void observe(const Observation& o) override;

 private:
  struct Point {
    Config config;
    Eigen::VectorXd x;
    bool ok;
    double log_value;  // ok only
  };
  Eigen::VectorXd encode(const Config& c) const;
  std::vector<Config> candidates();
  void fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const Eigen::VectorXd& extra_noise);
  std::vector<Config> model_proposals(size_t want);
  std::vector<double> scores(double* best) const;
  std::vector<size_t> training_set(const std::vector<double>& ys);

  const Space& space_;
  std::mt19937_64 rng_;
  SeededQueue q_;
  ValidPool pool_;
  std::vector<size_t> dims_;  // parameters with more than one value
  size_t initial_;
  std::vector<Point> observed_;
  size_t ok_count_ = 0;
  std::unordered_map<uint64_t, Config> pending_;  // proposed, result not in yet
  std::vector<Config> reservoir_;                 // sampled unseen valid configs (large spaces)
  // Hyperparameters, in logs; fitted_at_: observations at the last fit.
  Eigen::VectorXd log_ls_;
  double log_sf2_ = 0, log_sn2_ = 0;
  size_t fitted_at_ = 0;
};

}  // namespace gt::search
