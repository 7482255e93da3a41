#include "strategies/strategy_bayes.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

namespace gt::search {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// Cost caps: the GP is cubic in its training points and linear in its candidates; these
// keep a proposal in the tens of milliseconds on spaces of 10^4+ valid points.
constexpr size_t kMaxTrain = 250;          // training points: the best half + a random rest
constexpr size_t kMaxFit = 160;            // of those, for the hyperparameter fit
constexpr size_t kAllCandidates = 2000;    // fewer unseen valid points: all are candidates
constexpr size_t kRandomCandidates = 800;  // else a random sample of this many ...
constexpr size_t kLocalParents = 8;        // ... plus the neighbourhoods of the best configs
constexpr int kLocalMutations = 24;
constexpr double kFailureNoise = 0.3;  // extra variance of an imputed failure (in normal scores)
constexpr double kXi = 0.01;           // EI's margin: prefer clear improvements
constexpr double kSqrt5 = 2.2360679774997896964;

double matern52(double r2) {
  double r = std::sqrt(r2);
  return (1.0 + kSqrt5 * r + 5.0 / 3.0 * r2) * std::exp(-kSqrt5 * r);
}

// sf2 · Matérn-5/2 between the rows of a and b, both already divided by the length scales.
MatrixXd kernel(const MatrixXd& a, const MatrixXd& b, double sf2) {
  VectorXd a2 = a.rowwise().squaredNorm(), b2 = b.rowwise().squaredNorm();
  MatrixXd k = -2.0 * a * b.transpose();
  k.colwise() += a2;
  k.rowwise() += b2.transpose();
  return k.unaryExpr([sf2](double r2) { return sf2 * matern52(std::max(0.0, r2)); });
}

double norm_pdf(double z) { return 0.3989422804014327 * std::exp(-0.5 * z * z); }
double norm_cdf(double z) { return 0.5 * std::erfc(-z * 0.7071067811865476); }

// Inverse of the standard normal CDF (Acklam's rational approximation, |error| < 1.2e-9).
double norm_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425;
  if (p < lo) {
    double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - lo) return -norm_quantile(1 - p);
  double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double expected_improvement(double best, double mu, double var) {
  double s = std::sqrt(std::max(var, 1e-18));
  double imp = best - mu - kXi;
  if (s < 1e-9) return std::max(imp, 0.0);
  double z = imp / s;
  return imp * norm_cdf(z) + s * norm_pdf(z);
}

// Weak priors on the log hyperparameters (mean, sd): they keep a fit on few points sane.
constexpr double kPriorLs[2] = {-0.7, 1.2};   // length scale ~0.5 of a parameter's range
constexpr double kPriorSf2[2] = {0.0, 1.0};   // signal variance ~ the standardised data's
constexpr double kPriorSn2[2] = {-4.6, 1.5};  // noise variance ~1 % of it
constexpr double kBoundLs[2] = {-3.5, 3.4};
constexpr double kBoundSf2[2] = {-3.0, 3.0};
constexpr double kBoundSn2[2] = {-11.5, 0.0};

}  // namespace

BayesOpt::BayesOpt(const Space& space, uint64_t seed, std::vector<Config> first)
    : space_(space), rng_(seed), q_(space, std::move(first)), pool_(space) {
  for (size_t i = 0; i < space_.dims(); ++i)
    if (space_.params()[i].values.size() > 1) dims_.push_back(i);
  initial_ = std::max<size_t>(6, 2 * dims_.size() + 2);
  log_ls_ = VectorXd::Constant(Eigen::Index(dims_.size()), kPriorLs[0]);
  log_sf2_ = kPriorSf2[0];
  log_sn2_ = kPriorSn2[0];
}

VectorXd BayesOpt::encode(const Config& c) const {
  auto pos = space_.positions(c);
  VectorXd x(Eigen::Index(dims_.size()));
  for (size_t j = 0; j < dims_.size(); ++j)
    x[Eigen::Index(j)] = double(pos[dims_[j]]) / double(space_.params()[dims_[j]].values.size() - 1);
  return x;
}

std::vector<Config> BayesOpt::propose(size_t max) {
  std::vector<Config> out;
  auto take = [&](Config c) {
    pending_.emplace(space_.index_of(c), c);
    out.push_back(std::move(c));
  };
  Config c;
  while (out.size() < max && q_.next(&c)) take(c);
  // Random configs first: the model needs a spread of successes before it can guide.
  while (out.size() < max && (dims_.empty() || q_.proposed() < initial_ || ok_count_ < 2)) {
    auto x = pool_.draw_unseen(rng_, q_);
    if (!x) return out;
    q_.mark(*x);
    take(std::move(*x));
  }
  if (out.size() < max) {
    for (auto& x : model_proposals(max - out.size())) {
      q_.mark(x);
      take(std::move(x));
    }
  }
  while (out.size() < max) {  // the model found no candidate: fall back to random
    auto x = pool_.draw_unseen(rng_, q_);
    if (!x) break;
    q_.mark(*x);
    take(std::move(*x));
  }
  return out;
}

void BayesOpt::observe(const Observation& o) {
  pending_.erase(space_.index_of(o.config));
  bool ok = usable(o);
  Point p{o.config, encode(o.config), ok, ok ? std::log(o.value) : 0.0};
  ok_count_ += ok;
  observed_.push_back(std::move(p));
}

std::vector<Config> BayesOpt::candidates() {
  std::vector<Config> out;
  std::unordered_set<uint64_t> taken;
  auto add = [&](const Config& c) {
    if (!q_.seen(c) && taken.insert(space_.index_of(c)).second) out.push_back(c);
  };
  if (pool_.materialised()) {
    size_t unseen = pool_.points().size() - std::min(pool_.points().size(), q_.proposed());
    if (unseen <= kAllCandidates) {
      for (auto& p : pool_.points()) add(p);
      return out;
    }
    for (size_t i = 0; i < kRandomCandidates; ++i)
      if (auto x = pool_.draw_unseen(rng_, q_)) add(*x);
  } else {
    // A space too large to list: keep a reservoir of sampled valid points, topped up a
    // little each time, so the cost of rejection sampling is spread over the proposals.
    std::erase_if(reservoir_, [&](const Config& r) { return q_.seen(r); });
    for (auto& r : reservoir_) add(r);
    for (int draws = 0; reservoir_.size() < kRandomCandidates && draws < 300; ++draws) {
      auto x = pool_.draw_unseen(rng_, q_, 4000);
      if (!x) break;
      if (taken.count(space_.index_of(*x))) continue;
      add(*x);
      reservoir_.push_back(std::move(*x));
    }
  }
  std::vector<size_t> ok;
  for (size_t i = 0; i < observed_.size(); ++i)
    if (observed_[i].ok) ok.push_back(i);
  size_t parents = std::min(kLocalParents, ok.size());
  std::partial_sort(ok.begin(), ok.begin() + Eigen::Index(parents), ok.end(),
                    [&](size_t a, size_t b) { return observed_[a].log_value < observed_[b].log_value; });
  for (size_t k = 0; k < parents; ++k) {
    const Config& parent = observed_[ok[k]].config;
    for (auto& nb : space_.neighbours(parent))
      if (space_.valid(nb)) add(nb);
    for (int t = 0; t < kLocalMutations; ++t)
      if (auto x = pool_.mutate(parent, rng_, q_, 16)) add(*x);
  }
  return out;
}

void BayesOpt::fit(const MatrixXd& x, const VectorXd& y, const VectorXd& extra_noise) {
  const Eigen::Index n = x.rows(), d = x.cols();
  std::vector<MatrixXd> diff2(size_t(d), MatrixXd(n, n));
  for (Eigen::Index k = 0; k < d; ++k)
    for (Eigen::Index j = 0; j < n; ++j)
      for (Eigen::Index i = 0; i < n; ++i) {
        double t = x(i, k) - x(j, k);
        diff2[size_t(k)](i, j) = t * t;
      }
  // Maximise log marginal likelihood + log prior by Adam on the log hyperparameters,
  // starting from the previous fit; keep the best point seen.
  const Eigen::Index np = d + 2;
  VectorXd theta(np);
  theta << log_ls_, log_sf2_, log_sn2_;
  VectorXd best_theta = theta, m = VectorXd::Zero(np), v = VectorXd::Zero(np);
  double best_obj = -std::numeric_limits<double>::infinity();
  const int iters = fitted_at_ == 0 ? 80 : 30;
  const double lr = 0.08, b1 = 0.9, b2 = 0.999;
  MatrixXd r2(n, n), kf(n, n), common(n, n), w(n, n);
  for (int it = 1; it <= iters; ++it) {
    VectorXd ls2 = (2.0 * theta.head(d)).array().exp();
    double sf2 = std::exp(theta[d]), sn2 = std::exp(theta[d + 1]);
    r2.setZero();
    for (Eigen::Index k = 0; k < d; ++k) r2 += diff2[size_t(k)] / ls2[k];
    for (Eigen::Index j = 0; j < n; ++j)
      for (Eigen::Index i = 0; i < n; ++i) {
        double r = std::sqrt(r2(i, j)), e = std::exp(-kSqrt5 * r);
        kf(i, j) = sf2 * (1.0 + kSqrt5 * r + 5.0 / 3.0 * r2(i, j)) * e;
        common(i, j) = sf2 * 5.0 / 3.0 * (1.0 + kSqrt5 * r) * e;
      }
    MatrixXd kmat = kf;
    kmat.diagonal().array() += sn2 + extra_noise.array();
    Eigen::LLT<MatrixXd> llt(kmat);
    if (llt.info() != Eigen::Success) break;
    VectorXd alpha = llt.solve(y);
    double logdet = 2.0 * llt.matrixLLT().diagonal().array().log().sum();
    double obj = -0.5 * y.dot(alpha) - 0.5 * logdet;
    auto prior = [](double t, const double* p) { return -0.5 * (t - p[0]) * (t - p[0]) / (p[1] * p[1]); };
    for (Eigen::Index k = 0; k < d; ++k) obj += prior(theta[k], kPriorLs);
    obj += prior(theta[d], kPriorSf2) + prior(theta[d + 1], kPriorSn2);
    if (obj > best_obj) {
      best_obj = obj;
      best_theta = theta;
    }
    // d obj / d theta = 0.5 tr((alpha alpha^T - K^-1) dK/dtheta) + d log prior / d theta.
    w = alpha * alpha.transpose() - llt.solve(MatrixXd::Identity(n, n));
    VectorXd g(np);
    MatrixXd wc = w.cwiseProduct(common);
    for (Eigen::Index k = 0; k < d; ++k)
      g[k] = 0.5 * wc.cwiseProduct(diff2[size_t(k)]).sum() / ls2[k] - (theta[k] - kPriorLs[0]) / (kPriorLs[1] * kPriorLs[1]);
    g[d] = 0.5 * w.cwiseProduct(kf).sum() - (theta[d] - kPriorSf2[0]) / (kPriorSf2[1] * kPriorSf2[1]);
    g[d + 1] = 0.5 * sn2 * w.trace() - (theta[d + 1] - kPriorSn2[0]) / (kPriorSn2[1] * kPriorSn2[1]);
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g.cwiseProduct(g);
    VectorXd mh = m / (1 - std::pow(b1, it)), vh = v / (1 - std::pow(b2, it));
    theta += lr * mh.cwiseQuotient((vh.array().sqrt() + 1e-8).matrix());
    for (Eigen::Index k = 0; k < d; ++k) theta[k] = std::clamp(theta[k], kBoundLs[0], kBoundLs[1]);
    theta[d] = std::clamp(theta[d], kBoundSf2[0], kBoundSf2[1]);
    theta[d + 1] = std::clamp(theta[d + 1], kBoundSn2[0], kBoundSn2[1]);
  }
  log_ls_ = best_theta.head(d);
  log_sf2_ = best_theta[d];
  log_sn2_ = best_theta[d + 1];
}

namespace {
// The batch: each pick the candidate of highest expected improvement, then the kriging
// believer's variance update for the candidates left.
std::vector<Config> pick_batch(const std::vector<Config>& cands, const VectorXd& mu, VectorXd var, const MatrixXd& xc,
                               const MatrixXd& vmat, double sf2, double sn2, double best, size_t want) {
  const Eigen::Index nc = Eigen::Index(cands.size());
  std::vector<Config> out;
  std::vector<char> chosen(size_t(nc), 0);
  std::vector<VectorXd> updates;  // rank-one variance updates of the batch chosen so far
  while (out.size() < want) {
    Eigen::Index pick = -1;
    double best_ei = -1;
    for (Eigen::Index j = 0; j < nc; ++j) {
      if (chosen[size_t(j)]) continue;
      double ei = expected_improvement(best, mu[j], var[j] + sn2);
      if (ei > best_ei || (ei == best_ei && mu[j] < mu[pick])) {
        best_ei = ei;
        pick = j;
      }
    }
    if (pick < 0) break;
    chosen[size_t(pick)] = 1;
    out.push_back(cands[size_t(pick)]);
    if (out.size() == want) break;
    // Condition on the picked config observed at its mean: the posterior covariance with
    // it, minus the earlier picks' share, shrinks every candidate's variance.
    VectorXd cov = kernel(xc, xc.row(pick), sf2) - vmat.transpose() * vmat.col(pick);
    for (auto& u : updates) cov -= u * u[pick];
    VectorXd u = cov / std::sqrt(var[pick] + sn2);
    var = (var - u.cwiseAbs2()).cwiseMax(1e-12);
    updates.push_back(std::move(u));
  }
  return out;
}

}  // namespace

// The model's target is the normal score of each time's rank among the successes, not the
// time itself: GEMM times have a long tail of slow configs that would otherwise set the scale
// and drown the few-percent differences near the optimum. A failure scores as the slowest
// success (less trusted). *best: the best score.
std::vector<double> BayesOpt::scores(double* best) const {
  std::vector<size_t> ranked;
  for (size_t i = 0; i < observed_.size(); ++i)
    if (observed_[i].ok) ranked.push_back(i);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](size_t a, size_t b) { return observed_[a].log_value < observed_[b].log_value; });
  std::vector<double> ys(observed_.size());
  const double n_ok = double(ranked.size());
  for (size_t r = 0; r < ranked.size(); ++r) ys[ranked[r]] = norm_quantile((double(r) + 0.5) / n_ok);
  *best = ys[ranked.front()];
  const double worst = ys[ranked.back()];
  for (size_t i = 0; i < observed_.size(); ++i)
    if (!observed_[i].ok) ys[i] = worst;
  return ys;
}

// Training set: everything, or the best half of the cap plus a random draw of the rest.
std::vector<size_t> BayesOpt::training_set(const std::vector<double>& ys) {
  std::vector<size_t> order(observed_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (observed_[a].ok != observed_[b].ok) return observed_[a].ok;
    return ys[a] < ys[b];
  });
  std::vector<size_t> train;
  if (order.size() <= kMaxTrain) {
    train = order;
  } else {
    train.assign(order.begin(), order.begin() + kMaxTrain / 2);
    std::vector<size_t> rest(order.begin() + kMaxTrain / 2, order.end());
    std::shuffle(rest.begin(), rest.end(), rng_);
    train.insert(train.end(), rest.begin(), rest.begin() + (kMaxTrain - kMaxTrain / 2));
  }
  return train;
}

std::vector<Config> BayesOpt::model_proposals(size_t want) {
  double best = 0;
  const std::vector<double> ys = scores(&best);
  const std::vector<size_t> train = training_set(ys);
  const Eigen::Index n = Eigen::Index(train.size()), d = Eigen::Index(dims_.size());
  auto gather = [&](const std::vector<size_t>& idx, MatrixXd* x, VectorXd* y, VectorXd* e) {
    x->resize(Eigen::Index(idx.size()), d);
    y->resize(Eigen::Index(idx.size()));
    e->resize(Eigen::Index(idx.size()));
    for (size_t r = 0; r < idx.size(); ++r) {
      x->row(Eigen::Index(r)) = observed_[idx[r]].x.transpose();
      (*y)[Eigen::Index(r)] = ys[idx[r]];
      (*e)[Eigen::Index(r)] = observed_[idx[r]].ok ? 0.0 : kFailureNoise;
    }
  };

  // Refit the hyperparameters as the data grows by a quarter (at least 5 points).
  if (fitted_at_ == 0 || observed_.size() >= fitted_at_ + std::max<size_t>(5, fitted_at_ / 4)) {
    std::vector<size_t> fit_idx = train;
    if (fit_idx.size() > kMaxFit) {
      // The best of the training set matter most near the optimum; a random rest keeps the
      // global trend.
      std::vector<size_t> rest(fit_idx.begin() + kMaxFit / 2, fit_idx.end());
      std::shuffle(rest.begin(), rest.end(), rng_);
      fit_idx.resize(kMaxFit / 2);
      fit_idx.insert(fit_idx.end(), rest.begin(), rest.begin() + (kMaxFit - kMaxFit / 2));
    }
    MatrixXd fx;
    VectorXd fy, fe;
    gather(fit_idx, &fx, &fy, &fe);
    fit(fx, fy, fe);
    fitted_at_ = observed_.size();
  }

  std::vector<Config> cands = candidates();
  if (cands.empty()) return {};

  VectorXd inv_ls = (-log_ls_).array().exp();
  const double sf2 = std::exp(log_sf2_), sn2 = std::exp(log_sn2_);
  MatrixXd xt;
  VectorXd yt, et;
  gather(train, &xt, &yt, &et);
  // Pending configs join the variance's training set (kriging believer); the mean needs
  // only the observed ones.
  const Eigen::Index p = Eigen::Index(pending_.size());
  MatrixXd xall(n + p, d);
  xall.topRows(n) = xt;
  {
    // Pending configs in index order, so the result does not depend on hash-map order.
    std::vector<uint64_t> keys;
    for (auto& kv : pending_) keys.push_back(kv.first);
    std::sort(keys.begin(), keys.end());
    for (Eigen::Index r = 0; r < p; ++r) xall.row(n + r) = encode(pending_.at(keys[size_t(r)])).transpose();
  }
  xall = xall * inv_ls.asDiagonal();
  MatrixXd kall = kernel(xall, xall, sf2);
  kall.diagonal().array() += sn2;
  kall.diagonal().head(n) += et;
  Eigen::LLT<MatrixXd> llt_all(kall);
  for (double jitter = 1e-8; llt_all.info() != Eigen::Success && jitter < 1; jitter *= 100) {
    kall.diagonal().array() += jitter;
    llt_all.compute(kall);
  }
  Eigen::LLT<MatrixXd> llt_obs(kall.topLeftCorner(n, n));
  VectorXd alpha = llt_obs.solve(yt);

  const Eigen::Index nc = Eigen::Index(cands.size());
  MatrixXd xc(nc, d);
  for (Eigen::Index r = 0; r < nc; ++r) xc.row(r) = encode(cands[size_t(r)]).transpose();
  xc = xc * inv_ls.asDiagonal();
  MatrixXd kc = kernel(xall, xc, sf2);
  VectorXd mu = kc.topRows(n).transpose() * alpha;
  MatrixXd vmat = llt_all.matrixL().solve(kc);
  VectorXd var = (VectorXd::Constant(nc, sf2) - vmat.colwise().squaredNorm().transpose()).cwiseMax(1e-12);

  return pick_batch(cands, mu, var, xc, vmat, sf2, sn2, best, want);
}

}  // namespace gt::search
