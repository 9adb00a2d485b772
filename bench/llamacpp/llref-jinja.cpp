// llref-jinja renders chat conversations the way llama-server does by
// default: the model's Jinja template executed by llama.cpp's common
// library (common_chat_templates_apply, as llama-server calls it, with its
// default options), then tokenized with add_special and parse_special on.
// It is llref's chat mode with the Jinja path instead of the built-in
// renderer; unlike llref.c it needs this release's headers (common/chat.h
// and what it includes), which ref.sh takes from the llama.cpp source the
// node-llama-cpp npm package ships, and links the prebuilt
// libllama-common.so. ref.sh builds and runs it for `ref.sh chat-jinja`.
//
// usage: llref-jinja MODEL INPUT      (INPUT "-" = standard input)
//
// INPUT is llref's chat input (see llref.c: chat, msg ROLE TEXT, template
// TEXT, template_file FILE, add_generation_prompt 0|1) plus:
//   enable_thinking 0|1|auto  (default auto: on when the template supports
//                             it, as llama-server decides)
//   now SECONDS               the time templates print (strftime_now, and
//                             the date the Llama 3.x handler inserts), as
//                             Unix seconds in UTC (default 1735689600,
//                             2025-01-01T00:00:00Z; llama-server uses the
//                             time of the request). The Jinja runtime reads
//                             the clock with time() and the date context
//                             with std::chrono::system_clock::now(), so
//                             this program defines time() and
//                             clock_gettime() (exported with -rdynamic, they
//                             take precedence over the C library's; only
//                             CLOCK_REALTIME is fixed) and sets TZ=UTC.
//   msg_json JSON             one message of the current chat in OpenAI's
//                             shape, on one line (tool role with
//                             tool_call_id, assistant tool_calls, null
//                             content), read by llama-server's own parser
//                             (common_chat_msgs_parse_oaicompat)
//   tools JSON                the current chat's tools, OpenAI's array on
//                             one line (common_chat_tools_parse_oaicompat)
//   tool_choice auto|required|none   of the current chat (default auto)
//   parallel_tool_calls 0|1   of the current chat (default 0)
//   output TEXT               a model output (llref escapes) to parse as
//                             llama-server parses the reply to the current
//                             chat (common_chat_parse with the chat's
//                             parser and generation prompt, tool calls
//                             parsed when the chat has tools and
//                             tool_choice is not none); the result gives
//                             content, reasoning_content and tool_calls
//   reasoning_effort TEXT     of the current chat: the template's
//                             reasoning_effort, as llama-server passes a
//                             request's (a chat template kwarg)
//   reasoning_format none|auto|deepseek   for every chat (default
//                             deepseek, llama-server's default)
//
// With tools, a result also gives the chat format llama.cpp chose, its
// grammar (lazy or not) and the triggers that start it.
//
// Output strings follow llref.c's rules (invalid UTF-8 runs as one U+FFFD,
// a "_hex" twin with the exact bytes).
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "chat.h"
#include "llama.h"

// The clock every caller of time() in this process sees: see the header.
static time_t fixed_now = 1735689600;

extern "C" time_t time(time_t *t) {
	if (t)
		*t = fixed_now;
	return fixed_now;
}

extern "C" int clock_gettime(clockid_t id, struct timespec *ts) {
	if (id == CLOCK_REALTIME) {
		ts->tv_sec = fixed_now;
		ts->tv_nsec = 0;
		return 0;
	}
	return static_cast<int>(syscall(SYS_clock_gettime, id, ts));
}

namespace {

[[noreturn]] void fail(const std::string &msg) {
	std::fprintf(stderr, "llref-jinja: %s\n", msg.c_str());
	std::exit(1);
}

// utf8_len returns the length of the valid UTF-8 sequence at s, or 0 (Go's
// rules: no overlongs, surrogates or values past U+10FFFF).
int utf8_len(const unsigned char *s, size_t n) {
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	int len;
	unsigned char lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (static_cast<size_t>(len) > n || s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

std::string json_str(const std::string &s) {
	std::string o = "\"";
	const auto *u = reinterpret_cast<const unsigned char *>(s.data());
	size_t i = 0, n = s.size();
	while (i < n) {
		int l = utf8_len(u + i, n - i);
		if (l == 0) {
			while (i < n && utf8_len(u + i, n - i) == 0)
				i++;
			o += "\xef\xbf\xbd";
			continue;
		}
		unsigned char c = u[i];
		char esc[8];
		if (c == '"' || c == '\\') {
			o += '\\';
			o += static_cast<char>(c);
		} else if (c < 0x20 || c == 0x7f) {
			std::snprintf(esc, sizeof esc, "\\u%04x", c);
			o += esc;
		} else
			o.append(s, i, l);
		i += l;
	}
	return o + "\"";
}

std::string json_str_hex(const std::string &key, const std::string &s) {
	std::string o = "\"" + key + "\": " + json_str(s) + ", \"" + key + "_hex\": \"";
	char h[3];
	for (unsigned char c : s) {
		std::snprintf(h, sizeof h, "%02x", c);
		o += h;
	}
	return o + "\"";
}

bool unescape(const std::string &s, std::string &out) {
	out.clear();
	for (size_t i = 0; i < s.size(); i++) {
		char c = s[i];
		if (c == '\\') {
			if (++i == s.size())
				return false;
			switch (s[i]) {
			case '\\': c = '\\'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'x': {
				if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
				    !std::isxdigit(static_cast<unsigned char>(s[i + 2])))
					return false;
				long v = std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16);
				c = static_cast<char>(v);
				i += 2;
				break;
			}
			default:
				return false;
			}
		}
		out += c;
	}
	return true;
}

std::vector<llama_token> tokenize(const llama_vocab *vocab, const std::string &s) {
	std::vector<llama_token> ids(s.size() + 8);
	int32_t n = llama_tokenize(vocab, s.data(), static_cast<int32_t>(s.size()), ids.data(),
				   static_cast<int32_t>(ids.size()), true, true);
	if (n < 0) {
		if (n == INT32_MIN)
			fail("tokenization overflows");
		ids.resize(-n);
		n = llama_tokenize(vocab, s.data(), static_cast<int32_t>(s.size()), ids.data(),
				   static_cast<int32_t>(ids.size()), true, true);
		if (n < 0)
			fail("llama_tokenize disagrees with itself");
	}
	ids.resize(n);
	return ids;
}

struct conv {
	std::vector<common_chat_msg> msgs;
	std::vector<std::string> msg_json; // each message as given, for the output
	std::vector<common_chat_tool> tools;
	std::string tools_json;
	std::vector<std::string> outputs;
	std::string effort;
	common_chat_tool_choice choice = COMMON_CHAT_TOOL_CHOICE_AUTO;
	bool parallel = false;
};

void quiet(ggml_log_level level, const char *text, void *user) {
	int *keep = static_cast<int *>(user);
	if (level != GGML_LOG_LEVEL_CONT)
		*keep = level >= GGML_LOG_LEVEL_WARN;
	if (*keep)
		std::fprintf(stderr, "llref-jinja: llama.cpp: %s", text);
}

} // namespace

int main(int argc, char **argv) {
	if (argc != 3) {
		std::fprintf(stderr, "usage: llref-jinja MODEL INPUT\n");
		return 2;
	}
	FILE *f = std::strcmp(argv[2], "-") ? std::fopen(argv[2], "r") : stdin;
	if (f == nullptr)
		fail(std::string("cannot open ") + argv[2]);
	std::vector<conv> convs;
	std::string tmpl, text;
	bool add_gen = true;
	int thinking = -1;
	common_reasoning_format rfmt = COMMON_REASONING_FORMAT_DEEPSEEK;
	long long now = 1735689600;
	char *line = nullptr;
	size_t cap = 0;
	ssize_t got;
	long ln = 0;
	while ((got = getline(&line, &cap, f)) >= 0) {
		ln++;
		std::string l(line, got);
		while (!l.empty() && (l.back() == '\n' || l.back() == '\r'))
			l.pop_back();
		if (l.empty() || l[0] == '#')
			continue;
		size_t sp = l.find(' ');
		std::string key = l.substr(0, sp), arg = sp == std::string::npos ? "" : l.substr(sp + 1);
		auto bad = [&](const char *what) { fail("input line " + std::to_string(ln) + ": " + key + ": " + what); };
		if (key == "chat")
			convs.emplace_back();
		else if (key == "msg") {
			if (convs.empty())
				bad("before any chat");
			size_t s2 = arg.find(' ');
			common_chat_msg m;
			m.role = arg.substr(0, s2);
			if (m.role.empty() || !unescape(s2 == std::string::npos ? "" : arg.substr(s2 + 1), m.content))
				bad("want ROLE TEXT with valid escapes");
			convs.back().msgs.push_back(m);
			convs.back().msg_json.push_back("{\"role\": " + json_str(m.role) + ", " + json_str_hex("content", m.content) + "}");
		} else if (key == "msg_json" || key == "tools") {
			if (convs.empty())
				bad("before any chat");
			try {
				common_json j = common_json::parse(arg);
				if (key == "tools") {
					convs.back().tools = common_chat_tools_parse_oaicompat(j);
					convs.back().tools_json = arg;
				} else {
					common_json arr = common_json::parse("[" + arg + "]");
					for (auto &m : common_chat_msgs_parse_oaicompat(arr))
						convs.back().msgs.push_back(m);
					convs.back().msg_json.push_back(arg);
				}
			} catch (const std::exception &e) {
				bad(e.what());
			}
		} else if (key == "tool_choice" && (arg == "auto" || arg == "required" || arg == "none")) {
			if (convs.empty())
				bad("before any chat");
			convs.back().choice = common_chat_tool_choice_parse_oaicompat(arg);
		} else if (key == "parallel_tool_calls" && (arg == "0" || arg == "1")) {
			if (convs.empty())
				bad("before any chat");
			convs.back().parallel = arg == "1";
		} else if (key == "output") {
			if (convs.empty())
				bad("before any chat");
			std::string o;
			if (!unescape(arg, o))
				bad("bad escape");
			convs.back().outputs.push_back(o);
		} else if (key == "reasoning_effort") {
			if (convs.empty() || arg.empty())
				bad("before any chat, or empty");
			convs.back().effort = arg;
		} else if (key == "reasoning_format" && (arg == "none" || arg == "auto" || arg == "deepseek"))
			rfmt = common_reasoning_format_from_name(arg);
		else if (key == "template") {
			if (!unescape(arg, tmpl))
				bad("bad escape");
		} else if (key == "template_file") {
			FILE *tf = std::fopen(arg.c_str(), "rb");
			if (tf == nullptr)
				bad("cannot open the file");
			tmpl.clear();
			char chunk[65536];
			size_t k;
			while ((k = std::fread(chunk, 1, sizeof chunk, tf)) > 0 && tmpl.size() < (64u << 20))
				tmpl.append(chunk, k);
			std::fclose(tf);
		} else if (key == "add_generation_prompt" && (arg == "0" || arg == "1"))
			add_gen = arg == "1";
		else if (key == "enable_thinking" && (arg == "0" || arg == "1" || arg == "auto"))
			thinking = arg == "auto" ? -1 : arg == "1";
		else if (key == "now") {
			char *end;
			now = std::strtoll(arg.c_str(), &end, 10);
			if (arg.empty() || *end)
				bad("want Unix seconds");
		} else
			bad("unknown directive or bad value");
	}
	std::free(line);
	fixed_now = static_cast<time_t>(now);
	setenv("TZ", "UTC", 1);
	tzset();
	int keep = 0;
	llama_log_set(quiet, &keep);
	llama_backend_init();
	llama_model_params mp = llama_model_default_params();
	mp.vocab_only = true; // rendering needs the vocabulary and metadata only
	llama_model *model = llama_model_load_from_file(argv[1], mp);
	if (model == nullptr)
		fail(std::string("cannot load ") + argv[1]);
	const llama_vocab *vocab = llama_model_get_vocab(model);
	common_chat_templates_ptr tmpls;
	try {
		tmpls = common_chat_templates_init(model, tmpl);
	} catch (const std::exception &e) {
		fail(std::string("the chat template does not parse: ") + e.what());
	}
	bool supports = common_chat_templates_support_enable_thinking(tmpls.get());
	bool enable = thinking < 0 ? supports : thinking == 1;
	const char *base = std::strrchr(argv[1], '/');
	base = base ? base + 1 : argv[1];
	std::string src = common_chat_templates_source(tmpls.get(), "");
	std::cout << "{\"tool\": \"llref-jinja\", \"mode\": \"chat\", \"llama_cpp\": " << json_str(llama_version())
		  << ",\n \"model_file\": " << json_str(base) << ", \"add_bos\": "
		  << (llama_vocab_get_add_bos(vocab) ? "true" : "false")
		  << ", \"add_eos\": " << (llama_vocab_get_add_eos(vocab) ? "true" : "false") << ",\n "
		  << json_str_hex("template", src) << ",\n \"add_generation_prompt\": " << (add_gen ? "true" : "false")
		  << ", \"supports_thinking\": " << (supports ? "true" : "false")
		  << ", \"enable_thinking\": " << (enable ? "true" : "false")
		  << ", \"reasoning_format\": " << json_str(common_reasoning_format_name(rfmt)) << ", \"now\": " << now << ",\n \"results\": [";
	for (size_t i = 0; i < convs.size(); i++) {
		std::cout << (i ? "," : "") << "\n  {\"messages\": [";
		for (size_t j = 0; j < convs[i].msg_json.size(); j++)
			std::cout << (j ? ", " : "") << convs[i].msg_json[j];
		std::cout << "],\n   ";
		if (!convs[i].effort.empty())
			std::cout << "\"reasoning_effort\": " << json_str(convs[i].effort) << ", ";
		if (!convs[i].tools.empty())
			std::cout << "\"tools\": " << convs[i].tools_json << ",\n   \"tool_choice\": \""
				  << (convs[i].choice == COMMON_CHAT_TOOL_CHOICE_AUTO ? "auto"
				      : convs[i].choice == COMMON_CHAT_TOOL_CHOICE_REQUIRED ? "required" : "none")
				  << "\", \"parallel_tool_calls\": " << (convs[i].parallel ? "true" : "false") << ",\n   ";
		common_chat_templates_inputs in;
		in.messages = convs[i].msgs;
		in.use_jinja = true;
		in.add_generation_prompt = add_gen;
		in.reasoning_format = rfmt;
		in.enable_thinking = enable;
		in.now = std::chrono::system_clock::time_point(std::chrono::seconds(now));
		in.tools = convs[i].tools;
		in.tool_choice = convs[i].choice;
		in.parallel_tool_calls = convs[i].parallel;
		if (!convs[i].effort.empty())
			in.chat_template_kwargs["reasoning_effort"] = common_json(convs[i].effort).dump();
		try {
			common_chat_params p = common_chat_templates_apply(tmpls.get(), in);
			std::vector<llama_token> ids = tokenize(vocab, p.prompt);
			std::cout << json_str_hex("rendered", p.prompt) << ",\n   ";
			if (!convs[i].tools.empty()) {
				std::cout << "\"format\": " << json_str(common_chat_format_name(p.format))
					  << ", \"grammar_lazy\": " << (p.grammar_lazy ? "true" : "false")
					  << ",\n   \"grammar\": " << json_str(p.grammar) << ",\n   \"triggers\": [";
				for (size_t k = 0; k < p.grammar_triggers.size(); k++)
					std::cout << (k ? ", " : "") << json_str(p.grammar_triggers[k].value);
				std::cout << "],\n   ";
			}
			std::cout << "\"ids\": [";
			for (size_t k = 0; k < ids.size(); k++)
				std::cout << (k ? ", " : "") << ids[k];
			std::cout << "]";
			if (!convs[i].outputs.empty()) {
				common_chat_parser_params pp(p);
				pp.reasoning_format = rfmt;
				pp.parser.load(p.parser);
				pp.parse_tool_calls = !convs[i].tools.empty() && convs[i].choice != COMMON_CHAT_TOOL_CHOICE_NONE;
				std::cout << ",\n   \"parsed\": [";
				for (size_t k = 0; k < convs[i].outputs.size(); k++) {
					const std::string &o = convs[i].outputs[k];
					std::cout << (k ? "," : "") << "\n    {" << json_str_hex("output", o) << ", ";
					try {
						common_chat_msg m = common_chat_parse(o, false, pp);
						std::cout << json_str_hex("content", m.content) << ", "
							  << json_str_hex("reasoning_content", m.reasoning_content) << ", \"tool_calls\": [";
						for (size_t c = 0; c < m.tool_calls.size(); c++)
							std::cout << (c ? ", " : "") << "{\"name\": " << json_str(m.tool_calls[c].name)
								  << ", \"arguments\": " << json_str(m.tool_calls[c].arguments) << "}";
						std::cout << "]}";
					} catch (const std::exception &e) {
						std::cout << "\"error\": " << json_str(e.what()) << "}";
					}
				}
				std::cout << "]";
			}
			std::cout << "}";
		} catch (const std::exception &e) {
			std::cout << "\"error\": " << json_str(e.what()) << "}";
		}
	}
	std::cout << "\n ]\n}\n";
	llama_model_free(model);
	return 0;
}
