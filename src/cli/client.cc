// Client commands against a running `gpuwasm serve`: deploy, invoke, ls, rm, top.
// The server is --server, else $GPUWASM_SERVER, else http://127.0.0.1:8080; the token is --token,
// else $GPUWASM_TOKEN.
#include "server/client.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/output.h"
#include "common/duration.h"

namespace gpuwasm::cli {
namespace {
namespace http = boost::beast::http;
using nlohmann::json;

struct ClientFlags {
  std::string server;
  std::string token;
};

void AddClientFlags(CLI::App* cmd, ClientFlags* f) {
  cmd->add_option("--server,-s", f->server, "Server URL (default: $GPUWASM_SERVER, else http://127.0.0.1:8080)");
  cmd->add_option("--token", f->token, "API token (default: $GPUWASM_TOKEN)");
}

Result<std::unique_ptr<server::HttpClient>> Connect(const ClientFlags& f) {
  std::string url = f.server;
  if (url.empty())
    url = std::getenv("GPUWASM_SERVER") != nullptr ? std::getenv("GPUWASM_SERVER") : "http://127.0.0.1:8080";
  std::string token = f.token;
  if (token.empty() && std::getenv("GPUWASM_TOKEN") != nullptr) token = std::getenv("GPUWASM_TOKEN");
  return server::HttpClient::Connect(url, token);
}

int ExitForHttp(unsigned status) {
  if (status == 400 || status == 413) return kExitBadModule;
  if (status == 404) return 66;
  if (status == 401 || status == 403) return 77;  // EX_NOPERM
  if (status == 429 || status == 503) return 75;  // EX_TEMPFAIL
  return kExitUnavailable;
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

struct DeployFlags {
  ClientFlags client;
  std::string file, name, entry;
  bool no_wait = false;
};

int Deploy(const DeployFlags& f) {
  auto bytes = ReadWholeFile(f.file);
  if (!bytes.ok()) return Fail("deploy", bytes.status().message(), 66);
  auto c = Connect(f.client);
  if (!c.ok()) return Fail("deploy", c.status().message(), kExitUsage);
  std::string target =
      "/v1/functions?name=" + UrlEncode(f.name) + (f.entry.empty() ? "" : "&entry=" + UrlEncode(f.entry));
  auto res = (*c)->Send(http::verb::post, target, std::move(*bytes), {{"Content-Type", "application/wasm"}});
  if (!res.ok()) return Fail("deploy", res.status().message(), kExitUnavailable);
  if (res->result_int() != 202) return Fail("deploy", server::ErrorText(*res), ExitForHttp(res->result_int()));
  json fn = json::parse(res->body(), nullptr, false);
  std::string id = fn.value("id", "");
  // Polls while it compiles: every 100 ms at first, then less often (up to 2 s); a 429 or 503 (a
  // rate-limited tenant, a busy node) is waited out as its Retry-After says. The deploy itself
  // succeeded: only the answer to "is it ready yet" is late.
  auto wait = std::chrono::milliseconds(100);
  while (!f.no_wait && fn.value("status", "") == "compiling") {
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 3 / 2, std::chrono::milliseconds(2000));
    auto r = (*c)->Send(http::verb::get, "/v1/functions/" + id);
    if (!r.ok()) return Fail("deploy", r.status().message(), kExitUnavailable);
    if (r->result_int() == 429 || r->result_int() == 503) {
      auto retry = r->find(http::field::retry_after);
      long seconds = retry != r->end() ? std::strtol(std::string(retry->value()).c_str(), nullptr, 10) : 1;
      wait = std::chrono::milliseconds(1000 * std::clamp(seconds, 1L, 60L));
      continue;
    }
    if (r->result_int() != 200) return Fail("deploy", server::ErrorText(*r), ExitForHttp(r->result_int()));
    fn = json::parse(r->body(), nullptr, false);
  }
  if (fn.value("status", "") == "failed") {
    return Fail("deploy", "compiling failed: " + fn.value("error", std::string("(no reason given)")), kExitBadModule);
  }
  if (JsonOutput()) {
    PrintJson(fn);
  } else {
    std::printf("%s version %lld: %s (%s)\n", fn.value("name", "").c_str(),
                static_cast<long long>(fn.value("version", 0)), id.c_str(), fn.value("status", "").c_str());
  }
  return 0;
}

struct InvokeFlags {
  ClientFlags client;
  std::string function, input, timeout;
  std::vector<std::string> args, env;
};

int Invoke(const InvokeFlags& f) {
  std::string body;
  if (!f.input.empty()) {
    if (f.input == "-") {
      body.assign(std::istreambuf_iterator<char>(std::cin), {});
    } else {
      auto in = ReadWholeFile(f.input);
      if (!in.ok()) return Fail("invoke", in.status().message(), 66);
      body = std::move(*in);
    }
  }
  auto c = Connect(f.client);
  if (!c.ok()) return Fail("invoke", c.status().message(), kExitUsage);
  std::string target = "/v1/functions/" + UrlEncode(f.function) + "/invoke";
  std::string sep = "?";
  if (JsonOutput()) target += sep + "format=json", sep = "&";
  if (!f.timeout.empty()) target += sep + "timeout=" + UrlEncode(f.timeout), sep = "&";
  if (!f.args.empty()) target += sep + "args=" + UrlEncode(nlohmann::json(f.args).dump()), sep = "&";
  if (!f.env.empty()) {
    nlohmann::json env = nlohmann::json::object();
    for (const std::string& e : f.env) {
      const size_t eq = e.find('=');
      if (eq == std::string::npos) return Fail("invoke", "--env " + e + ": write KEY=value", kExitUsage);
      env[e.substr(0, eq)] = e.substr(eq + 1);
    }
    target += sep + "env=" + UrlEncode(env.dump());
  }
  auto res = (*c)->Send(http::verb::post, target, std::move(body));
  if (!res.ok()) return Fail("invoke", res.status().message(), kExitUnavailable);
  auto status = res->find("X-Gpuwasm-Status");
  if (status == res->end()) return Fail("invoke", server::ErrorText(*res), ExitForHttp(res->result_int()));
  auto header = [&](const char* name) {
    auto it = res->find(name);
    return it == res->end() ? std::string() : std::string(it->value().data(), it->value().size());
  };
  if (JsonOutput()) {  // the result document (its "status" and "exit_status" say what the guest did)
    PrintJson(json::parse(res->body()));
    return std::atoi(header("X-Gpuwasm-Exit-Status").c_str());
  }
  std::fwrite(res->body().data(), 1, res->body().size(), stdout);
  std::fflush(stdout);
  if (!header("X-Gpuwasm-Trap").empty()) std::fprintf(stderr, "trap: %s\n", header("X-Gpuwasm-Trap").c_str());
  if (!header("X-Gpuwasm-Error").empty())
    std::fprintf(stderr, "gpuwasm invoke: %s\n", header("X-Gpuwasm-Error").c_str());
  return std::atoi(header("X-Gpuwasm-Exit-Status").c_str());
}

struct ListFlags {
  ClientFlags client;
};

int List(const ListFlags& f) {
  auto c = Connect(f.client);
  if (!c.ok()) return Fail("ls", c.status().message(), kExitUsage);
  auto res = (*c)->Send(http::verb::get, "/v1/functions");
  if (!res.ok()) return Fail("ls", res.status().message(), kExitUnavailable);
  if (res->result_int() != 200) return Fail("ls", server::ErrorText(*res), ExitForHttp(res->result_int()));
  if (JsonOutput()) {
    PrintJson(json::parse(res->body()));
    return 0;
  }
  json list = json::parse(res->body(), nullptr, false)["functions"];
  std::printf("%-20s %-24s %7s %-9s %10s %s\n", "ID", "NAME", "VERSION", "STATUS", "BYTES", "TENANT");
  for (const json& fn : list) {
    std::printf("%-20s %-24s %7lld %-9s %10llu %s\n", fn.value("id", "").c_str(), fn.value("name", "").c_str(),
                static_cast<long long>(fn.value("version", 0)), fn.value("status", "").c_str(),
                static_cast<unsigned long long>(fn.value("size", 0ull)), fn.value("tenant", "").c_str());
  }
  return 0;
}

struct RemoveFlags {
  ClientFlags client;
  std::vector<std::string> ids;
};

int Remove(const RemoveFlags& f) {
  auto c = Connect(f.client);
  if (!c.ok()) return Fail("rm", c.status().message(), kExitUsage);
  int code = 0;
  json deleted = json::array(), failed = json::array();  // (--json: one document for all ids)
  for (const std::string& id : f.ids) {
    auto res = (*c)->Send(http::verb::delete_, "/v1/functions/" + UrlEncode(id));
    if (!res.ok()) return Fail("rm", res.status().message(), kExitUnavailable);
    if (res->result_int() != 200) {
      code = ExitForHttp(res->result_int());
      if (JsonOutput()) {
        failed.push_back({{"id", id}, {"message", server::ErrorText(*res)}, {"exit_code", code}});
      } else {
        Fail("rm", id + ": " + server::ErrorText(*res), code);
      }
    } else if (JsonOutput()) {
      deleted.push_back(id);
    } else {
      std::printf("deleted %s\n", id.c_str());
    }
  }
  if (JsonOutput()) PrintJson({{"deleted", deleted}, {"failed", failed}});
  return code;
}

struct TopFlags {
  ClientFlags client;
  std::string interval = "1s";
  std::string metrics_token;  // empty: $GPUWASM_METRICS_TOKEN, else the API token
  bool once = false;
};

int Top(const TopFlags& f) {
  auto interval = ParseDuration(f.interval);
  if (!interval.ok()) return Fail("top", interval.status().message(), kExitUsage);
  auto c = Connect(f.client);
  if (!c.ok()) return Fail("top", c.status().message(), kExitUsage);
  // /metrics takes the node's metrics token where one is configured, not a tenant's.
  std::string metrics_token = f.metrics_token;
  if (metrics_token.empty() && std::getenv("GPUWASM_METRICS_TOKEN") != nullptr)
    metrics_token = std::getenv("GPUWASM_METRICS_TOKEN");
  std::vector<std::pair<std::string, std::string>> metrics_headers;
  if (!metrics_token.empty()) metrics_headers.emplace_back("Authorization", "Bearer " + metrics_token);
  for (;;) {
    auto inst = (*c)->Send(http::verb::get, "/v1/instances");
    if (!inst.ok()) return Fail("top", inst.status().message(), kExitUnavailable);
    if (inst->result_int() != 200) return Fail("top", server::ErrorText(*inst), ExitForHttp(inst->result_int()));
    auto metrics = (*c)->Send(http::verb::get, "/metrics", "", metrics_headers);
    // Why there is no GPU section, when /metrics could not be read: said, never left out silently.
    std::string gpm_error;
    if (!metrics.ok()) {
      gpm_error = "cannot read /metrics: " + metrics.status().message();
    } else if (metrics->result_int() == 401 || metrics->result_int() == 403) {
      gpm_error = "/metrics refused " +
                  std::string(metrics_token.empty() ? "this client: it needs the node's metrics token"
                                                    : "the metrics token given") +
                  " (--metrics-token or $GPUWASM_METRICS_TOKEN)";
    } else if (metrics->result_int() != 200) {
      gpm_error = "/metrics answered " + std::to_string(metrics->result_int()) + ": " + server::ErrorText(*metrics);
    }
    std::vector<std::string> gpm;  // the GPM samples' lines
    if (gpm_error.empty()) {
      std::istringstream lines(metrics->body());
      for (std::string l; std::getline(lines, l);) {
        if (l.rfind("gpuwasm_gpm_", 0) == 0) gpm.push_back(l);
      }
    }
    if (JsonOutput()) {  // one line per refresh: the instances and the GPM samples
      PrintJson({{"instances", json::parse(inst->body())["instances"]},
                 {"gpm", gpm_error.empty() ? json(gpm) : json(nullptr)},
                 {"gpm_error", gpm_error.empty() ? json(nullptr) : json(gpm_error)}});
      if (f.once) return 0;
      std::this_thread::sleep_for(*interval);
      continue;
    }
    std::ostringstream out;
    if (!f.once) out << "\x1b[H\x1b[2J";
    json list = json::parse(inst->body(), nullptr, false)["instances"];
    out << "instances: " << list.size() << "\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-6s %-20s %-20s %9s %8s %11s %14s %9s %7s %s\n", "ID", "FUNCTION", "FUNCTION_ID",
                  "ELAPSED", "KERNELS", "GPU_TIME_MS", "DEVICE_BYTES", "PTX_BYTES", "YIELDS", "TENANT");
    out << line;
    for (const json& i : list) {
      const json& m = i["metrics"];
      std::snprintf(line, sizeof line, "%-6llu %-20s %-20s %8.1fs %8llu %11.1f %14llu %9llu %7llu %s\n",
                    static_cast<unsigned long long>(i.value("id", 0ull)), i.value("function", "").c_str(),
                    i["function_id"].is_string() ? i["function_id"].get<std::string>().c_str() : "-",
                    i.value("elapsed_ms", 0) / 1e3, static_cast<unsigned long long>(m.value("kernels_launched", 0ull)),
                    i.value("gpu_time_ms", 0.0),
                    static_cast<unsigned long long>(m.value("device_bytes_allocated", 0ull)),
                    static_cast<unsigned long long>(m.value("bytes_pinned", 0ull)),
                    static_cast<unsigned long long>(m.value("yield_count", 0ull)), i.value("tenant", "").c_str());
      out << line;
    }
    if (!gpm_error.empty()) {
      out << "\nGPU (NVML GPM): " << gpm_error << "\n";
    } else if (gpm.empty()) {
      out << "\nGPU (NVML GPM): no samples (no GPM-capable GPU, or NVML absent on the server)\n";
    } else {
      out << "\nGPU (NVML GPM):\n";
      for (const std::string& l : gpm) out << "  " << l << "\n";
    }
    std::fputs(out.str().c_str(), stdout);
    std::fflush(stdout);
    if (f.once) return 0;
    std::this_thread::sleep_for(*interval);
  }
}

}  // namespace

void RegisterClient(CLI::App& app) {
  auto d = std::make_shared<DeployFlags>();
  CLI::App* deploy = app.add_subcommand(
      "deploy", "Deploy a .wasm to a server as the next version of a function, and wait until it compiled");
  deploy->add_option("file", d->file, "The guest .wasm")->required();
  deploy->add_option("--name,-n", d->name, "Function name")->required();
  deploy->add_option("--entry,-e", d->entry, "Export to call (default: _start, else run)");
  deploy->add_flag("--no-wait", d->no_wait, "Return while it is still compiling");
  AddClientFlags(deploy, &d->client);
  deploy->callback([d] { SetExitCode(Deploy(*d)); });

  auto i = std::make_shared<InvokeFlags>();
  CLI::App* invoke = app.add_subcommand(
      "invoke",
      "Invoke a deployed function (by name: its newest ready version; or by id); print its stdout and output, "
      "exit with its exit status (124 deadline, 134 trap); with --json the whole result (status, exit status, "
      "metrics, output, stdout, stderr) as one JSON document");
  invoke->add_option("function", i->function, "Function name or id")->required();
  invoke->add_option("--input,-i", i->input, "File whose bytes are the request body ('-': stdin)");
  invoke->add_option("--timeout,-t", i->timeout,
                     "Deadline (e.g. 500ms, 5s; a bare number is seconds; capped by the tenant's max_deadline)");
  invoke->add_option("--env", i->env, "An environment variable of the guest, KEY=value (repeatable)");
  invoke->add_option("args", i->args, "Arguments passed to the guest (after --)");
  AddClientFlags(invoke, &i->client);
  invoke->callback([i] { SetExitCode(Invoke(*i)); });

  auto l = std::make_shared<ListFlags>();
  CLI::App* ls = app.add_subcommand("ls", "List the deployed functions (every version) of your tenant");
  AddClientFlags(ls, &l->client);
  ls->callback([l] { SetExitCode(List(*l)); });

  auto r = std::make_shared<RemoveFlags>();
  CLI::App* rm = app.add_subcommand("rm", "Delete deployed function versions by id");
  rm->add_option("ids", r->ids, "Function ids (fn_...)")->required();
  AddClientFlags(rm, &r->client);
  rm->callback([r] { SetExitCode(Remove(*r)); });

  auto t = std::make_shared<TopFlags>();
  CLI::App* top =
      app.add_subcommand("top", "Live view of a server: running instances with their metrics, and GPU metrics");
  top->add_option("--interval", t->interval, "Refresh interval")->capture_default_str();
  top->add_flag("--once", t->once, "Print one snapshot and exit");
  top->add_option("--metrics-token", t->metrics_token,
                  "The node's metrics token, for the GPU section where [server].metrics_token is set "
                  "(default: $GPUWASM_METRICS_TOKEN)");
  AddClientFlags(top, &t->client);
  top->callback([t] { SetExitCode(Top(*t)); });
}

}  // namespace gpuwasm::cli
