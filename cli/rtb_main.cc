// `rtb`: the engine's single command. Each subcommand lives in its own file (<name>_cmd.h):
// its options, its defaults and the module call that does the work; this file only wires them.
// Subcommands that do not train never load LibTorch; training commands run the separate
// rtb-learner executable next to this one.
#include <CLI/CLI.hpp>
#include <string>

#include "budget_cmd.h"
#include "common.h"
#include "demo_cmd.h"
#include "exchange_cmd.h"
#include "fit_cmd.h"
#include "generate_cmd.h"
#include "kafka_cmd.h"
#include "learner_cmd.h"
#include "replay_cmd.h"
#include "report_cmd.h"
#include "rtb/core/build_info.h"
#include "serve_cmd.h"
#include "simulate_cmd.h"

namespace rtb::cli {
namespace {

int Main(int argc, char** argv) {
  // Training commands run the LibTorch executable (their --help too: it lists every option);
  // everything else stays torch-free.
  if (argc > 1) {
    const std::string sub = argv[1];
    if (sub == "train" || sub == "tune" || sub == "learn") return ExecLearner(sub, argc, argv, 2);
    if (sub == "train-pacing") return ExecLearner("train-pacing", argc, argv, 2);
  }
  CLI::App app{"rtb: a real-time bidding engine that learns to bid with multi-agent RL (DCMAB)"};
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       std::string("rtb ") + BuildVersion() + " (commit " + BuildCommit() + ")");

  // In the order `rtb --help` lists them.
  SimulateArgs sim;
  CLI::App* s = AddSimulateCommand(&app, &sim);
  GenerateArgs gen;
  CLI::App* g = AddGenerateCommand(&app, &gen);
  ServeArgs srv;
  CLI::App* sv = AddServeCommand(&app, &srv);
  AddLearnerCommands(&app);
  ExchangeArgs xa;
  CLI::App* xs = AddExchangeCommand(&app, &xa);
  ReplayArgs ra;
  CLI::App* rp = AddReplayCommand(&app, &ra);
  ReportArgs rep;
  CLI::App* rpt = AddReportCommand(&app, &rep);
  FitArgs fa;
  CLI::App* ft = AddFitCommand(&app, &fa);
  demo::DemoArgs da;
  CLI::App* dm = AddDemoCommand(&app, &da);
  BudgetArgs ba;
  CLI::App* bu = AddBudgetCommand(&app, &ba);
  KafkaArgs ka;
  CLI::App* kf = AddKafkaCommand(&app, &ka);
  LogArgs la;
  for (CLI::App* sub : {s, g, sv, xs, rp, rpt, ft, dm, bu, kf}) AddLogOptions(sub, &la);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (sv->parsed()) return RunServe(srv, la);
  for (CLI::App* sub : {s, g, xs, rp, rpt, ft, dm, bu, kf}) {
    if (!sub->parsed()) continue;
    if (auto st = InitLog(sub->get_name(), la, ""); !st.ok()) return Fail(st);
  }
  if (s->parsed()) return RunSimulate(sim);
  if (g->parsed()) return RunGenerate(gen, *g);
  if (xs->parsed()) return RunExchange(xa);
  if (dm->parsed()) return demo::RunDemo(da);
  if (rp->parsed()) return RunReplay(ra);
  if (rpt->parsed()) return RunReport(rep);
  if (ft->parsed()) return RunFit(fa);
  if (bu->parsed()) return RunBudget(ba);
  if (kf->parsed()) return RunKafka(ka);
  return 2;
}

}  // namespace
}  // namespace rtb::cli

int main(int argc, char** argv) { return rtb::cli::Main(argc, argv); }
