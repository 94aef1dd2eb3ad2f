// LibTorch unit tests of the learner: the update's math, gradients, export and checkpoints.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "maddpg.h"
#include "rtb/learner/agents.h"
#include "rtb/learner/state.h"

namespace rtb::learn {
namespace {

Normalizer Norm3x3() {
  Normalizer n;
  n.agents = 3;
  n.clusters = 3;
  return n;
}

HyperParams SmallHp() {
  HyperParams hp;
  hp.actor_hidden = 16;
  hp.critic_hidden = 8;
  return hp;
}

Transition RandomTransition(Rng& rng, const Normalizer& n, bool done) {
  Transition t;
  auto fill = [&](std::vector<float>& v, int len) {
    v.resize(static_cast<size_t>(len));
    for (auto& x : v) x = static_cast<float>(rng.Uniform() * 2 - 1);
  };
  fill(t.s, n.StateDim());
  fill(t.d, n.agents * n.clusters);
  fill(t.a, n.agents * n.clusters);
  fill(t.r, n.agents);
  fill(t.s2, n.StateDim());
  fill(t.d2, n.agents * n.clusters);
  t.done = done;
  return t;
}

// A minibatch of 8 random transitions from seed, the last step every third (T = 3).
Batch RandomBatch(uint64_t seed) {
  Rng rng(seed);
  std::vector<Transition> ts;
  for (int k = 0; k < 8; ++k) ts.push_back(RandomTransition(rng, Norm3x3(), k % 3 == 2));
  return MakeBatch(ts);
}

// The last step's delivery term, r_i -= penalty_i x max(0, target - cost_i / budget_i), with one
// penalty for all and with a penalty per agent; coordinated rewards carry the (weighted) sum.
TEST(DeliveryTerm, PerAgentPenaltiesWeighEachAgentsShortfall) {
  Normalizer n;
  n.agents = 2;
  n.clusters = 1;
  sim::Observation before, after;
  before.g_cost = {0, 0};
  before.g_revenue = {0, 0};
  before.x = {1, 0, 0};
  before.d = {0.5, 0.5};
  after = before;
  after.g_cost = {9.0, 9.9};  // budgets 10 and 10: shortfalls 0.1 and 0.01 at target 1
  after.step = 1;
  const std::vector<double> budgets = {10, 10};
  const PlayedStep p{.s = n.EncodeState(before, budgets),
                     .before = &before,
                     .a = {0, 0},
                     .rewards = {0, 0},
                     .after = &after,
                     .done = true};
  auto r_of = [&](const DeliveryTerm& t, bool coordinated) {
    return BuildTransition(n, p, budgets, coordinated, t).r;
  };
  const std::vector<float> one = r_of({1.0, 10.0, {}}, false);
  EXPECT_NEAR(one[0], -1.0, 1e-6);
  EXPECT_NEAR(one[1], -0.1, 1e-6);
  const std::vector<float> each = r_of({1.0, 10.0, {100.0, 10.0}}, false);
  EXPECT_NEAR(each[0], -10.0, 1e-5);
  EXPECT_NEAR(each[1], -0.1, 1e-6);
  const std::vector<float> coord = r_of({1.0, 0.0, {100.0, 10.0}}, true);
  EXPECT_NEAR(coord[0], -10.1, 1e-5);
  EXPECT_NEAR(coord[1], -10.1, 1e-5);
  // Not the last step: no term.
  PlayedStep mid = p;
  mid.done = false;
  EXPECT_NEAR(BuildTransition(n, mid, budgets, false, {1.0, 0.0, {100.0, 10.0}}).r[0], 0.0, 1e-6);
}

TEST(DeliveryTerm, APerAgentListMustHaveOneValuePerAgent) {
  EXPECT_TRUE(MakeDeliveryTerm(0.995, 10, {}, 3).ok());
  EXPECT_TRUE(MakeDeliveryTerm(0.995, 10, {300, 60, 60}, 3).ok());
  const auto bad = MakeDeliveryTerm(0.995, 10, {300, 60}, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("2 values, the market has 3 agents"), std::string::npos)
      << bad.status().message();
}

TEST(SoftUpdate, MovesTargetsTauOfTheWay) {
  torch::manual_seed(1);
  Actor a(4, 8), b(4, 8);
  auto pa = a->parameters(), pb = b->parameters();
  std::vector<torch::Tensor> before;
  for (auto& p : pb) before.push_back(p.detach().clone());
  SoftUpdate(*b, *a, 0.1);
  for (size_t k = 0; k < pa.size(); ++k) {
    EXPECT_TRUE(torch::allclose(pb[k], 0.1 * pa[k] + 0.9 * before[k], 1e-6, 1e-7));
  }
  HardUpdate(*b, *a);
  for (size_t k = 0; k < pa.size(); ++k) EXPECT_TRUE(torch::equal(pb[k], pa[k]));
}

// The exact optimiser step flushes subnormal moments to zero (a unit ReLU switched off leaves
// its weights' moments stuck at subnormals, each operation on them a microcode assist), and
// still moves every weight exactly as ATen's Adam does, which keeps the subnormals.
TEST(Adam, SubnormalMomentsAreFlushedAndTheWeightsKeepAtensFloats) {
  const int64_t n = 64;
  const float tiny = std::ldexp(1.0f, -147);  // 4 x 2^-149: subnormal
  torch::manual_seed(3);
  torch::Tensor p = torch::randn({n}) * 0.1, g = torch::randn({n}) * 0.01;
  torch::Tensor m = torch::randn({n}) * 0.001, v = torch::rand({n}) * 1e-4;
  for (int64_t k = 0; k < n; k += 2) {  // every other weight: a switched-off unit's
    g[k] = 0.0f;
    m[k] = (k % 4 == 0 ? 1 : -1) * tiny;
    v[k] = tiny;
  }
  // ATen: torch::optim::Adam at its 5th step, from these moments.
  torch::Tensor ref = p.clone().requires_grad_(true);
  torch::optim::Adam opt({ref}, torch::optim::AdamOptions(1e-3));
  auto state = std::make_unique<torch::optim::AdamParamState>();
  state->step(4);
  state->exp_avg(m.clone());
  state->exp_avg_sq(v.clone());
  opt.state()[c10::guts::to_string(ref.unsafeGetTensorImpl())] = std::move(state);
  ref.mutable_grad() = g.clone();
  opt.step();
  const auto& aten = static_cast<torch::optim::AdamParamState&>(*opt.state().begin()->second);
  // The exact step with the coefficients ExactOptimizerStep uses (AdamCoefficients), step 5, no
  // clip.
  AdamStepCoefficients c = AdamCoefficients(1e-3, 0.9, 0.999, 1e-8, 5, 1.0f, 0.0);
  torch::Tensor mine = p.clone(), m2 = m.clone(), v2 = v.clone();
  const unsigned csr = _mm_getcsr();
  ClipAdamSoftUpdate(c, n, g.data_ptr<float>(), mine.data_ptr<float>(), m2.data_ptr<float>(),
                     v2.data_ptr<float>(), nullptr);
  EXPECT_EQ(_mm_getcsr(), csr);  // the flush mode is the loop's alone
  EXPECT_EQ(std::memcmp(mine.data_ptr<float>(), ref.data_ptr<float>(), n * sizeof(float)), 0);
  for (int64_t k = 0; k < n; ++k) {
    SCOPED_TRACE(k);
    const float am = aten.exp_avg()[k].item<float>(), av = aten.exp_avg_sq()[k].item<float>();
    if (k % 2 == 0) {
      EXPECT_EQ(std::fpclassify(am), FP_SUBNORMAL);  // ATen keeps them ...
      EXPECT_EQ(std::fpclassify(av), FP_SUBNORMAL);
      EXPECT_EQ(m2[k].item<float>(), 0.0f);  // ... the exact step flushes them
      EXPECT_EQ(v2[k].item<float>(), 0.0f);
    } else {
      EXPECT_EQ(m2[k].item<float>(), am);
      EXPECT_EQ(v2[k].item<float>(), av);
    }
  }
  // Kept (flush_subnormals false, for measuring only): ATen's moments, float for float.
  c.flush_subnormals = false;
  torch::Tensor kept = p.clone(), m3 = m.clone(), v3 = v.clone();
  ClipAdamSoftUpdate(c, n, g.data_ptr<float>(), kept.data_ptr<float>(), m3.data_ptr<float>(),
                     v3.data_ptr<float>(), nullptr);
  EXPECT_TRUE(torch::equal(kept, mine));
  EXPECT_TRUE(torch::equal(m3, aten.exp_avg()));
  EXPECT_TRUE(torch::equal(v3, aten.exp_avg_sq()));
}

TEST(CriticTarget, Equation9OnAHandMadeBatchIncludingDone) {
  const torch::Tensor r = torch::tensor({{1.0f}, {2.0f}, {0.5f}});
  const torch::Tensor done = torch::tensor({{0.0f}, {1.0f}, {0.0f}});
  const torch::Tensor q_next = torch::tensor({{10.0f}, {10.0f}, {-4.0f}});
  const torch::Tensor y = CriticTarget(r, done, q_next, 0.9);
  EXPECT_FLOAT_EQ(y[0][0].item<float>(), 1.0f + 0.9f * 10.0f);
  EXPECT_FLOAT_EQ(y[1][0].item<float>(), 2.0f);  // done: y = r
  EXPECT_FLOAT_EQ(y[2][0].item<float>(), 0.5f - 0.9f * 4.0f);
}

// Eq. (9) for a minibatch: Q'_i runs on the rows that go on only (the batch keeps just their
// next states); the result equals Eq. (9) over every row, and y = r_i at the last steps.
TEST(Maddpg, CriticTargetsUseOnlyTheRowsThatGoOn) {
  torch::manual_seed(4);
  const HyperParams hp = SmallHp();
  Maddpg m(*MakeAlgoSpec("dcmab", 3, {}, hp), hp, Norm3x3());
  Rng rng(5);
  std::vector<Transition> ts;
  for (int k = 0; k < 8; ++k) ts.push_back(RandomTransition(rng, Norm3x3(), k == 2 || k == 5));
  const Batch b = MakeBatch(ts);
  ASSERT_EQ(b.live.numel(), 6);
  EXPECT_TRUE(torch::equal(b.live, torch::tensor({0, 1, 3, 4, 6, 7}, torch::kLong)));
  ASSERT_EQ(b.s2.size(0), 6);
  EXPECT_EQ(b.s2[2][0].item<float>(), ts[3].s2[0]);
  EXPECT_EQ(b.d2[5][1].item<float>(), ts[7].d2[1]);
  EXPECT_EQ(b.s.size(0), 8);

  // Reference: Q' on all 8 rows (the last steps' next states too), then Eq. (9).
  torch::Tensor s2_all = torch::empty({8, b.s.size(1)}), d2_all = torch::empty({8, b.d.size(1)});
  for (int64_t k = 0; k < 8; ++k) {
    s2_all[k] = torch::tensor(ts[static_cast<size_t>(k)].s2);
    d2_all[k] = torch::tensor(ts[static_cast<size_t>(k)].d2);
  }
  torch::NoGradGuard g;
  const torch::Tensor next_all = m.TargetJointActions(s2_all);
  for (int i = 0; i < 3; ++i) {
    const torch::Tensor y = m.CriticTargets(i, m.Prepare(b));
    const torch::Tensor q_all = m.critic_targets[static_cast<size_t>(i)]->forward(
        m.CriticState(s2_all, d2_all), m.CriticActions(next_all, i));
    const torch::Tensor r_i =
        b.r.index({torch::indexing::Slice(), torch::indexing::Slice(i, i + 1)});
    const torch::Tensor ref = CriticTarget(r_i, b.done, q_all, hp.gamma);
    EXPECT_TRUE(torch::allclose(y, ref, 1e-5, 1e-6)) << i;
    EXPECT_EQ(y[2][0].item<float>(), r_i[2][0].item<float>());
    EXPECT_EQ(y[5][0].item<float>(), r_i[5][0].item<float>());
    EXPECT_NE(y[3][0].item<float>(), r_i[3][0].item<float>());
  }
}

TEST(Maddpg, ActorInputsAreGAndXjPerCluster) {
  auto spec = MakeAlgoSpec("dcmab", 3, {}, SmallHp());
  Maddpg m(*spec, SmallHp(), Norm3x3());
  const Normalizer n = Norm3x3();
  torch::Tensor s = torch::arange(n.StateDim(), torch::kFloat).unsqueeze(0);
  const torch::Tensor in = m.ActorInputs(s);
  ASSERT_EQ(in.size(0), 3);
  ASSERT_EQ(in.size(1), n.ActorInputDim());  // 23 for N = L = 3
  EXPECT_EQ(n.ActorInputDim(), 23);
  // Row j: g (0..17) then x_j (18 + 5j .. 22 + 5j).
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(in[j][0].item<float>(), 0.0f);
    EXPECT_EQ(in[j][17].item<float>(), 17.0f);
    EXPECT_EQ(in[j][18].item<float>(), static_cast<float>(18 + 5 * j));
    EXPECT_EQ(in[j][22].item<float>(), static_cast<float>(22 + 5 * j));
  }
}

TEST(Maddpg, ActorGradientFlowsOnlyIntoAgentIsActor) {
  auto spec = MakeAlgoSpec("dcmab", 3, {}, SmallHp());
  Maddpg m(*spec, SmallHp(), Norm3x3());
  const Batch b = RandomBatch(3);
  for (auto& a : m.actors) a->zero_grad();
  m.ActorLoss(1, m.Prepare(b)).backward();
  auto grad_norm = [](const Actor& a) {
    double s = 0;
    for (const auto& p : a->parameters()) {
      if (p.grad().defined()) s += p.grad().abs().sum().item<double>();
    }
    return s;
  };
  EXPECT_GT(grad_norm(m.actors[1]), 0.0);
  EXPECT_EQ(grad_norm(m.actors[0]), 0.0);
  EXPECT_EQ(grad_norm(m.actors[2]), 0.0);
  for (const auto& t : m.actor_targets) EXPECT_EQ(grad_norm(t), 0.0);
}

// The update's actor step computes agent i's actor gradient alone: equal to the one a full
// backward gives, and no gradient at all for the critic it backpropagates through.
TEST(Maddpg, ActorStepGradientIsTheFullBackwardsForTheActorAndNothingElse) {
  auto spec = MakeAlgoSpec("dcmab", 3, {}, SmallHp());
  Maddpg m(*spec, SmallHp(), Norm3x3());
  const Batch b = RandomBatch(4);
  const Minibatch mb = m.Prepare(b);
  m.actor_flat[1].grad.zero_();
  m.ActorLoss(1, mb).backward();
  const torch::Tensor full = m.actor_flat[1].grad.clone();
  m.critic_flat[1].grad.zero_();
  m.ActorGradients(1, m.ActorLoss(1, mb));
  EXPECT_GT(full.abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(torch::equal(m.actor_flat[1].grad, full));
  EXPECT_EQ(m.critic_flat[1].grad.abs().sum().item<double>(), 0.0);
}

// The update through ExactMlp (the default) against the same update through torch::nn and
// autograd, from the same initial networks and on the same minibatches: every parameter of every
// actor, critic and target, and the reported losses, bit for bit. Paper sizes (actor 300-300,
// critic 100-100), so the matrix products run OpenBLAS's real kernels; minibatches of 1 to 64
// rows with 0, 1 or all rows going on; the centralised critic, the independent one (own actions
// only), the one-step bandit (no targets) and partial coordination; with and without the
// pre-tanh penalty.
TEST(Maddpg, ExactUpdateGivesTheSameFloatsAsAutograd) {
  struct Case {
    const char* algo;
    std::vector<int> learning;
    double preact_reg;
  };
  const std::vector<Case> cases = {{"dcmab", {}, 0.01},
                                   {"ddpg", {}, 0.01},
                                   {"bandit", {}, 0.01},
                                   {"dcmab-coord", {}, 0.0},
                                   {"partial", {1, 3}, 0.01}};
  // ctest runs this test under ATen's AVX2 and baseline kernels too (tests/CMakeLists.txt); make
  // sure that took effect: the baseline kernels round a * b + c twice, the SIMD ones once.
  const char* cap = std::getenv("ATEN_CPU_CAPABILITY");
  if (cap != nullptr && std::string(cap) == "default") {
    EXPECT_FALSE(AtenFusesMultiplyAdd());
  }
  if (cap != nullptr && std::string(cap) == "avx2" && __builtin_cpu_supports("fma")) {
    EXPECT_TRUE(AtenFusesMultiplyAdd());
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.algo);
    HyperParams hp;  // the paper's sizes and this project's defaults
    hp.actor_preact_reg = c.preact_reg;
    const auto spec = MakeAlgoSpec(c.algo, 3, c.learning, hp);
    ASSERT_TRUE(spec.ok()) << c.algo;
    torch::manual_seed(11);
    Maddpg exact(*spec, hp, Norm3x3());
    torch::manual_seed(11);
    Maddpg reference(*spec, hp, Norm3x3());
    reference.reference_autograd = true;
    Rng rng(12);
    // Batch sizes, and which rows are an episode's last step.
    const std::vector<std::pair<int, int>> shapes = {{32, 3}, {1, 1}, {1, 2},  {5, 1},
                                                     {64, 3}, {7, 7}, {32, 3}, {2, 1}};
    for (const auto& [rows, every] : shapes) {
      std::vector<Transition> ts;
      for (int r = 0; r < rows; ++r) {
        ts.push_back(RandomTransition(rng, Norm3x3(), every == 1 || r % every == every - 1));
      }
      const Batch b = MakeBatch(ts);
      UpdateStats se, sr;
      exact.Update(b, &se);
      reference.Update(b, &sr);
      EXPECT_EQ(se.updates, sr.updates);
      EXPECT_EQ(se.critic_loss, sr.critic_loss) << c.algo << " rows " << rows;
      EXPECT_EQ(se.actor_loss, sr.actor_loss) << c.algo << " rows " << rows;
      auto same = [](const std::vector<FlatParams>& x, const std::vector<FlatParams>& y) {
        for (size_t k = 0; k < x.size(); ++k) {
          const auto n = static_cast<size_t>(x[k].data.numel());
          if (std::memcmp(x[k].data.data_ptr<float>(), y[k].data.data_ptr<float>(),
                          n * sizeof(float)) != 0) {
            return false;
          }
        }
        return true;
      };
      EXPECT_TRUE(same(exact.actor_flat, reference.actor_flat)) << c.algo << " rows " << rows;
      EXPECT_TRUE(same(exact.critic_flat, reference.critic_flat)) << c.algo << " rows " << rows;
      EXPECT_TRUE(same(exact.actor_target_flat, reference.actor_target_flat))
          << c.algo << " rows " << rows;
      EXPECT_TRUE(same(exact.critic_target_flat, reference.critic_target_flat))
          << c.algo << " rows " << rows;
    }
    // And the networks did move: the comparison is not between two untouched copies.
    torch::manual_seed(11);
    Maddpg fresh(*spec, hp, Norm3x3());
    const size_t learner = c.learning.empty() ? 0 : static_cast<size_t>(c.learning[0] - 1);
    EXPECT_FALSE(torch::equal(fresh.actor_flat[learner].data, exact.actor_flat[learner].data));
    EXPECT_FALSE(torch::equal(fresh.critic_flat[learner].data, exact.critic_flat[learner].data));
  }
}

// Partial coordination's learning agents are numbered 1..N; anything else is a clear error.
TEST(AlgoSpec, PartialRejectsLearningAgentsOutsideOneToN) {
  const HyperParams hp;
  EXPECT_FALSE(MakeAlgoSpec("partial", 3, {0}, hp).ok());
  EXPECT_FALSE(MakeAlgoSpec("partial", 3, {4}, hp).ok());
  EXPECT_FALSE(MakeAlgoSpec("partial", 3, {}, hp).ok());
  const auto ok = MakeAlgoSpec("partial", 3, {3}, hp);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->learns, (std::vector<bool>{false, false, true}));
}

// The registry is the one list of the methods: every entry makes a spec and a learner (its
// update has a factory) that acts; `all` is every entry but partial (which needs
// learning_agents); an unknown name is refused with every method's name.
TEST(AlgoSpec, EveryRegisteredMethodBuildsAndActsAndAnUnknownOneIsNamed) {
  const HyperParams hp = SmallHp();
  const std::vector<float> s(static_cast<size_t>(Norm3x3().StateDim()), 0.3f);
  for (const AlgoEntry& e : AlgoRegistry()) {
    SCOPED_TRACE(e.name);
    const auto spec = MakeAlgoSpec(e.name, 3, {2}, hp);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    MultiAgentLearner l(*spec, hp, Norm3x3(), 1);
    EXPECT_EQ(l.spec().name, e.name);
    const std::vector<float> a = l.Act(s, true);
    ASSERT_EQ(a.size(), 9u);
    EXPECT_EQ(spec->trains(), std::any_of(a.begin(), a.end(), [](float v) { return v != 0; }));
  }
  EXPECT_EQ(AllAlgoNames(),
            (std::vector<std::string>{"manual", "bandit", "a2c", "ddpg", "dcmab", "dcmab-coord"}));
  const auto unknown = MakeAlgoSpec("nope", 3, {}, hp);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "unknown algo 'nope' (manual, bandit, a2c, ddpg, dcmab, dcmab-coord, partial)");
}

TEST(Maddpg, CentralisedCriticSeesEveryActionAndDIndependentOnlyItsOwn) {
  const HyperParams hp = SmallHp();
  Maddpg dcmab(*MakeAlgoSpec("dcmab", 3, {}, hp), hp, Norm3x3());
  Maddpg ddpg(*MakeAlgoSpec("ddpg", 3, {}, hp), hp, Norm3x3());
  EXPECT_EQ(dcmab.critics[0]->l1->weight.size(1), Norm3x3().StateDim() + 9);  // s and d
  EXPECT_EQ(dcmab.critics[0]->l2->weight.size(1), hp.critic_hidden + 9);      // all actions
  EXPECT_EQ(ddpg.critics[0]->l1->weight.size(1), Norm3x3().StateDim());
  EXPECT_EQ(ddpg.critics[0]->l2->weight.size(1), hp.critic_hidden + 3);  // own actions
}

TEST(Maddpg, UpdateReducesTheCriticLossOnAFixedBatch) {
  const HyperParams hp = SmallHp();
  MultiAgentLearner l(*MakeAlgoSpec("dcmab", 3, {}, hp), hp, Norm3x3(), 5);
  Rng rng(4);
  std::vector<Transition> ts;
  for (int k = 0; k < 32; ++k) ts.push_back(RandomTransition(rng, Norm3x3(), true));
  const double first = l.Update({ts}).critic_loss;
  double last = first;
  for (int k = 0; k < 200; ++k) last = l.Update({ts}).critic_loss;
  EXPECT_LT(last, first * 0.5);
}

TEST(Learner, PartialCoordinationKeepsNonLearnersAtManual) {
  const HyperParams hp = SmallHp();
  auto spec = MakeAlgoSpec("partial", 3, {3}, hp);
  ASSERT_TRUE(spec.ok());
  MultiAgentLearner l(*spec, hp, Norm3x3(), 1);
  const std::vector<float> s(static_cast<size_t>(Norm3x3().StateDim()), 0.3f);
  const auto a = l.Act(s, true);
  for (int k = 0; k < 6; ++k) EXPECT_EQ(a[static_cast<size_t>(k)], 0.0f);
  EXPECT_FALSE(MakeAlgoSpec("partial", 3, {}, hp).ok());
  EXPECT_FALSE(MakeAlgoSpec("nope", 3, {}, hp).ok());
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/learner_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TempDir, TorchScriptExportLoadsBackWithTheSameOutputs) {
  const HyperParams hp = SmallHp();
  MultiAgentLearner l(*MakeAlgoSpec("dcmab", 3, {}, hp), hp, Norm3x3(), 9);
  Rng rng(1);
  std::vector<Transition> ts;
  for (int k = 0; k < 16; ++k) ts.push_back(RandomTransition(rng, Norm3x3(), false));
  for (int k = 0; k < 5; ++k) l.Update({ts});
  ASSERT_TRUE(l.ExportTorchScript(dir_).ok());
  const std::vector<float> s = ts[0].s;
  const std::vector<float> a = l.Act(s, false);
  // Build the actor inputs [g, x_j] by hand and run the exported modules.
  for (int i = 0; i < 3; ++i) {
    torch::jit::Module mod = torch::jit::load(dir_ + "/actor_" + std::to_string(i) + ".pt");
    for (int j = 0; j < 3; ++j) {
      std::vector<float> in(s.begin(), s.begin() + 18);
      in.insert(in.end(), s.begin() + 18 + 5 * j, s.begin() + 23 + 5 * j);
      const torch::Tensor x = torch::from_blob(in.data(), {1, 23}, torch::kFloat).clone();
      const float out = mod.forward({x}).toTensor()[0][0].item<float>();
      EXPECT_NEAR(out, a[static_cast<size_t>(i * 3 + j)], 1e-6);
    }
  }
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/normalization.json"));
}

TEST_F(TempDir, CheckpointRoundTripRestoresEverything) {
  const HyperParams hp = SmallHp();
  auto spec = *MakeAlgoSpec("dcmab", 3, {}, hp);
  MultiAgentLearner a(spec, hp, Norm3x3(), 11);
  Rng rng(2);
  std::vector<Transition> ts;
  for (int k = 0; k < 16; ++k) ts.push_back(RandomTransition(rng, Norm3x3(), k % 3 == 2));
  for (int k = 0; k < 3; ++k) a.Update({ts});
  a.EndEpisode();
  a.Snapshot();
  ASSERT_TRUE(a.SaveCheckpoint(dir_ + "/ck").ok());
  MultiAgentLearner b(spec, hp, Norm3x3(), 99);  // other seed: other weights
  EXPECT_NE(a.ActorParameters(0), b.ActorParameters(0));
  ASSERT_TRUE(b.LoadCheckpoint(dir_ + "/ck").ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.ActorParameters(i), b.ActorParameters(i));
  EXPECT_EQ(a.noise_sigma(), b.noise_sigma());
  EXPECT_EQ(a.episodes_done(), b.episodes_done());
  // Same optimizer state and RNG: the next updates and noisy actions agree exactly.
  a.Update({ts});
  b.Update({ts});
  EXPECT_EQ(a.ActorParameters(2), b.ActorParameters(2));
  EXPECT_EQ(a.Act(ts[0].s, true), b.Act(ts[0].s, true));
  // A checkpoint of another algo is refused; a missing one is NotFound.
  MultiAgentLearner c(*MakeAlgoSpec("ddpg", 3, {}, hp), hp, Norm3x3(), 1);
  EXPECT_FALSE(c.LoadCheckpoint(dir_ + "/ck").ok());
  EXPECT_EQ(c.LoadCheckpoint(dir_ + "/none").code(), Status::Code::kNotFound);
}

// A damaged checkpoint is refused as corrupt, naming the damaged file: never half-loaded and
// served. (rtb learn stops on it rather than start over: learner/src/online.cc.)
TEST_F(TempDir, ADamagedCheckpointIsRefusedNamingTheFile) {
  const HyperParams hp = SmallHp();
  auto spec = *MakeAlgoSpec("dcmab", 3, {}, hp);
  MultiAgentLearner a(spec, hp, Norm3x3(), 11);
  a.Snapshot();
  ASSERT_TRUE(a.SaveCheckpoint(dir_ + "/ck").ok());
  for (const std::string file :
       {"meta.json", "agent1_critic.pt", "agent0_actor_opt.pt", "agent2_best_actor.pt"}) {
    const std::string copy = dir_ + "/damaged-" + file;
    std::filesystem::copy(dir_ + "/ck", copy, std::filesystem::copy_options::recursive);
    const auto size = std::filesystem::file_size(copy + "/" + file);
    std::filesystem::resize_file(copy + "/" + file, size / 2);  // a write cut short
    MultiAgentLearner b(spec, hp, Norm3x3(), 99);
    const Status st = b.LoadCheckpoint(copy);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << file << ": " << st.message();
    EXPECT_NE(st.message().find(file), std::string::npos) << st.message().substr(0, 300);
  }
  MultiAgentLearner c(spec, hp, Norm3x3(), 99);
  EXPECT_TRUE(c.LoadCheckpoint(dir_ + "/ck").ok());  // the undamaged one loads
}

TEST(Learner, A2cUpdatesOnPolicy) {
  const HyperParams hp = SmallHp();
  MultiAgentLearner l(*MakeAlgoSpec("a2c", 3, {}, hp), hp, Norm3x3(), 3);
  Rng rng(5);
  std::vector<Transition> ep;
  for (int t = 0; t < 3; ++t) {
    Transition tr = RandomTransition(rng, Norm3x3(), t == 2);
    tr.a = l.Act(tr.s, true);
    ep.push_back(tr);
  }
  const auto before = l.ActorParameters(0);
  EXPECT_EQ(l.UpdateOnPolicy(ep).updates, 3);
  EXPECT_NE(before, l.ActorParameters(0));
}

}  // namespace
}  // namespace rtb::learn
