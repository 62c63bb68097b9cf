// envbox completion bash|zsh|fish: completion scripts generated from the registered commands,
// so a new command or option is completed the day it is added.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace envbox::cli {
namespace {

struct CompletionCommand {
    std::string shell;
};

struct OptionModel {
    std::vector<std::string> names;  ///< "-v", "--verbose"
    std::string description;
    bool takes_value = false;
    std::vector<std::string> choices;  ///< from a CLI::IsMember check
    bool takes_package = false;        ///< its value is a PKG: the locks' package names
};

struct CommandModel {
    std::string name, description;
    std::vector<OptionModel> options;
    std::vector<std::string> positional_choices;  ///< its positional's values (completion: bash …)
    bool takes_env = false;                       ///< a positional named ENV: manifest names
    bool takes_package = false;  ///< a positional named PKG: the package names of the locks
    bool takes_number = false;   ///< a positional named N after ENV: a generation (`pin ENV N`)
};

// The values of an IsMember check, which CLI11 shows in the type name: "TEXT:{a,b,c}".
std::vector<std::string> choices_of(const CLI::Option& o) {
    std::string t = o.get_type_name();
    auto open = t.find('{'), close = t.rfind('}');
    std::vector<std::string> out;
    if (open == std::string::npos || close == std::string::npos || close < open) return out;
    std::string list = t.substr(open + 1, close - open - 1), word;
    for (char c : list + ",") {
        if (c == ',') {
            if (!word.empty()) out.push_back(word);
            word.clear();
        } else if (c != ' ') {
            word += c;
        }
    }
    return out;
}

// Options and positionals of one app (the root: its global options).
CommandModel model_of(const CLI::App& app) {
    CommandModel m{app.get_name(), app.get_description(), {}, {}, false, false, false};
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_positional() && o->get_lnames().empty() && o->get_snames().empty()) {
            if (o->get_name(true) == "ENV") m.takes_env = true;
            if (o->get_name(true) == "PKG") m.takes_package = true;
            if (o->get_name(true) == "N") m.takes_number = true;
            for (auto& c : choices_of(*o))
                m.positional_choices.push_back(c);
            continue;
        }
        OptionModel om;
        for (const auto& s : o->get_snames())
            om.names.push_back("-" + s);
        for (const auto& l : o->get_lnames())
            om.names.push_back("--" + l);
        if (om.names.empty()) continue;
        om.description = o->get_description();
        om.takes_value = o->get_items_expected_max() > 0;
        om.choices = choices_of(*o);
        om.takes_package = o->get_option_text() == "PKG";
        m.options.push_back(std::move(om));
    }
    return m;
}

// 'text' for sh and fish, with ' and \ escaped as fish needs (sh: ' closes, \' , reopens).
std::string fish_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'' || c == '\\') out += '\\';
        out += c;
    }
    return out + "'";
}
std::string sh_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string join(const std::vector<std::string>& words, const std::string& sep = " ") {
    std::string out;
    for (const auto& w : words)
        out += (out.empty() ? "" : sep) + w;
    return out;
}

// The names read at completion time (manifests' file names, locks' package names) are anyone's
// who can commit to the repository. Each script passes them on as literal words only (never
// through a list the shell expands again, as bash's compgen -W does) and offers only valid ones:
// check_env_name's rule and PEP 508's. Letters are listed, not ranged: in some locales a
// shell's A-Z also matches other letters.
const std::string kAlnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// A shell test (bash's or zsh's [[ ]]) that $n is a valid environment name and no lock's.
std::string env_name_test() {
    return "[[ $n != pylock.* && ${#n} -le 100 && $n == [" + kAlnum + "_-]* && $n != *[!" + kAlnum +
           "._-]* ]]";
}

// awk printing the locks' valid package names, one a line (/dev/null: never stdin, whatever
// the glob gives).
std::string awk_packages(const std::string& locks) {
    return R"(awk '/^\[\[packages\]\]$/ { p = 1; next } p && /^name = "/ { p = 0; n = $0; )"
           R"(gsub(/^name = "|"$/, "", n); if (n ~ /^[)" +
           kAlnum + "]([" + kAlnum + "._-]*[" + kAlnum + "])?$/) print n }' /dev/null " + locks +
           " 2>/dev/null";
}

// Words as a bash array's elements, each quoted.
std::string bash_words(const std::vector<std::string>& words) {
    std::vector<std::string> quoted;
    for (const auto& w : words)
        quoted.push_back(sh_quote(w));
    return join(quoted);
}

std::string bash_script(const CommandModel& root, const std::vector<CommandModel>& commands) {
    std::vector<std::string> names, globals;
    for (const auto& c : commands)
        names.push_back(c.name);
    for (const auto& o : root.options)
        globals.insert(globals.end(), o.names.begin(), o.names.end());
    std::string s =
        "# envbox completion for bash: source <(envbox completion bash)\n"
        "# COMPREPLY is filtered here, not by compgen -W, which would expand the names again.\n"
        "_envbox_envs() {  # appends the manifests' environment names to the caller's words\n"
        "    local f n\n"
        "    for f in manifests/*.toml; do\n"
        "        n=${f#manifests/}\n"
        "        n=${n%.toml}\n"
        "        " +
        env_name_test() +
        " && words+=(\"$n\")\n"
        "    done\n"
        "}\n"
        "_envbox_packages() {  # appends the locks' package names to the caller's words\n"
        "    local n\n"
        "    while IFS= read -r n; do words+=(\"$n\"); done < <(" +
        awk_packages("manifests/pylock.*.toml") +
        ")\n"
        "}\n"
        "_envbox_reply() {  # COMPREPLY: the caller's words that begin with cur\n"
        "    local w\n"
        "    COMPREPLY=()\n"
        "    for w in \"${words[@]}\"; do\n"
        "        if [[ $w == \"$cur\"* ]]; then COMPREPLY+=(\"$w\"); fi\n"
        "    done\n"
        "}\n"
        "_envbox() {\n"
        "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" cmd=\"\" i\n"
        "    local -a words=()\n"
        "    [ \"$COMP_CWORD\" -gt 0 ] && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        "        case \"${COMP_WORDS[i]}\" in\n"
        "            " +
        join(names, "|") +
        ") cmd=\"${COMP_WORDS[i]}\"; break ;;\n"
        "        esac\n"
        "    done\n"
        "    case \"$cmd:$prev\" in\n";
    auto value_cases = [&s](const std::string& pattern, const OptionModel& o) {
        if (!o.takes_value) return;
        for (const auto& n : o.names) {
            s += "        " + pattern + ":" + n + ") " +
                 (o.takes_package ? std::string("_envbox_packages; _envbox_reply")
                  : o.choices.empty()
                      ? std::string("mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")")
                      : "words=(" + bash_words(o.choices) + "); _envbox_reply") +
                 "; return ;;\n";
        }
    };
    for (const auto& c : commands)
        for (const auto& o : c.options)
            value_cases(c.name, o);
    for (const auto& o : root.options)
        value_cases("*", o);
    s += "    esac\n    case \"$cmd\" in\n";
    s += "        \"\") words=(" + bash_words(names) + " " + bash_words(globals) + ") ;;\n";
    for (const auto& c : commands) {
        std::vector<std::string> words;
        for (const auto& o : c.options)
            words.insert(words.end(), o.names.begin(), o.names.end());
        words.insert(words.end(), globals.begin(), globals.end());
        words.insert(words.end(), c.positional_choices.begin(), c.positional_choices.end());
        s += "        " + c.name + ") words=(" + bash_words(words) + ")" +
             (c.takes_env ? "; _envbox_envs" : "") + (c.takes_package ? "; _envbox_packages" : "") +
             " ;;\n";
    }
    s += "    esac\n"
         "    _envbox_reply\n"
         "}\n"
         "complete -F _envbox envbox\n";
    return s;
}

// A description inside a zsh _arguments spec '--opt[…]' or a _describe entry 'name:…'.
std::string zsh_text(const std::string& d) {
    std::string out;
    for (char c : d) {
        if (c == '[')
            out += '(';
        else if (c == ']')
            out += ')';
        else if (c == ':')
            out += "\\:";
        else if (c == '\'')
            out += "'\\''";
        else if (c == '\n')
            out += ' ';
        else
            out += c;
    }
    return out;
}

std::string zsh_specs(const std::vector<OptionModel>& options) {
    std::string s;
    for (const auto& o : options)
        for (const auto& n : o.names) {
            s += " '" + n + "[" + zsh_text(o.description) + "]";
            if (o.takes_package)
                s += ":package:_envbox_packages";
            else if (o.takes_value)
                s += o.choices.empty() ? ":value:_files" : ":value:(" + join(o.choices) + ")";
            s += "'";
        }
    return s;
}

std::string zsh_script(const CommandModel& root, const std::vector<CommandModel>& commands) {
    std::vector<std::string> names;
    for (const auto& c : commands)
        names.push_back(c.name);
    std::string s =
        "#compdef envbox\n"
        "# envbox completion for zsh: source <(envbox completion zsh)\n"
        "_envbox_envs() {\n"
        "    local -a envs\n"
        "    local n\n"
        "    for n in manifests/*.toml(N:t:r); do\n"
        "        " +
        env_name_test() +
        " && envs+=(\"$n\")\n"
        "    done\n"
        "    compadd -a envs\n"
        "}\n"
        "_envbox_packages() {\n"
        "    compadd -- ${(f)\"$(" +
        awk_packages("manifests/pylock.*.toml(N)") +
        ")\"}\n"
        "}\n"
        "_envbox() {\n"
        "    local -a commands globals\n"
        "    commands=(";
    for (const auto& c : commands)
        s += "\n        '" + c.name + ":" + zsh_text(c.description) + "'";
    s += "\n    )\n    globals=(" + zsh_specs(root.options) + ")\n";
    s += "    local cmd i\n"
         "    for (( i = 2; i < CURRENT; i++ )); do\n"
         "        case $words[i] in\n"
         "            (" +
         join(names, "|") +
         ") cmd=$words[i]; break ;;\n"
         "        esac\n"
         "    done\n"
         "    if [[ -z $cmd ]]; then\n"
         "        if [[ $PREFIX == -* ]]; then _arguments $globals; else _describe command "
         "commands; fi\n"
         "        return\n"
         "    fi\n"
         // Quoted: the word being completed is often empty, and an unquoted slice drops it.
         "    words=(\"${(@)words[i,-1]}\")\n"
         "    (( CURRENT -= i - 1 ))\n"
         "    case $cmd in\n";
    for (const auto& c : commands) {
        std::string positional = c.takes_env && c.takes_package
                                     ? " '1:environment:_envbox_envs' '2:package:_envbox_packages'"
                                 : c.takes_env && c.takes_number
                                     ? " '1:environment:_envbox_envs' '2:generation number: '"
                                 : c.takes_env ? " '*:environment:_envbox_envs'"
                                 : !c.positional_choices.empty()
                                     ? " '1:value:(" + join(c.positional_choices) + ")'"
                                     : std::string();
        s += "        (" + c.name + ") _arguments $globals" + zsh_specs(c.options) + positional +
             " ;;\n";
    }
    s += "    esac\n"
         "}\n"
         "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _envbox \"$@\"; else compdef "
         "_envbox envbox; fi\n";
    return s;
}

std::string fish_option(const std::string& condition, const OptionModel& o) {
    std::string s =
        "complete -c envbox" + (condition.empty() ? std::string() : " -n " + fish_quote(condition));
    for (const auto& n : o.names)
        s += n.rfind("--", 0) == 0 ? " -l " + n.substr(2) : " -s " + n.substr(1);
    // -F: files for a value, which the script's leading `complete -f` turns off elsewhere.
    if (o.takes_package)
        s += " -x -a '(__envbox_packages)'";
    else if (o.takes_value)
        s += o.choices.empty() ? " -r -F" : " -x -a " + fish_quote(join(o.choices));
    return s + " -d " + fish_quote(o.description) + "\n";
}

std::string fish_script(const CommandModel& root, const std::vector<CommandModel>& commands) {
    std::string s =
        "# envbox completion for fish: envbox completion fish | source\n"
        "function __envbox_envs\n"
        "    for f in manifests/*.toml\n"
        "        string replace -rf '^manifests/([" +
        kAlnum + "_-][" + kAlnum +
        R"(._-]{0,99})\.toml\z' '$1' -- $f)"
        "\n"
        "    end | string match -v 'pylock.*'\n"
        "end\n"
        "function __envbox_packages\n"
        "    set -l locks manifests/pylock.*.toml\n"
        "    " +
        awk_packages("$locks") +
        "\n"
        "end\n"
        "complete -c envbox -f\n";
    for (const auto& o : root.options)
        s += fish_option("", o);
    for (const auto& c : commands) {
        s += "complete -c envbox -n __fish_use_subcommand -a " + c.name + " -d " +
             fish_quote(c.description) + "\n";
        const std::string cond = "__fish_seen_subcommand_from " + c.name;
        for (const auto& o : c.options)
            s += fish_option(cond, o);
        if (c.takes_env)
            s += "complete -c envbox -n " + fish_quote(cond) + " -a '(__envbox_envs)'\n";
        if (c.takes_package)
            s += "complete -c envbox -n " + fish_quote(cond) + " -a '(__envbox_packages)'\n";
        if (!c.positional_choices.empty())
            s += "complete -c envbox -n " + fish_quote(cond) + " -a " +
                 fish_quote(join(c.positional_choices)) + "\n";
    }
    return s;
}

void run_completion(const CLI::App& root_app, const CompletionCommand& cmd) {
    CommandModel root = model_of(root_app);
    std::vector<CommandModel> commands;
    for (const CLI::App* sub : root_app.get_subcommands({})) {
        CommandModel m = model_of(*sub);
        // A command of commands (`cache clean|prune`): its words complete as the first
        // positional, their options beside its own.
        for (const CLI::App* nested : sub->get_subcommands({})) {
            if (nested->get_name().empty()) continue;  // an option group (the global options)
            m.positional_choices.push_back(nested->get_name());
            for (auto& o : model_of(*nested).options)
                if (std::none_of(m.options.begin(), m.options.end(),
                                 [&o](const OptionModel& e) { return e.names == o.names; }))
                    m.options.push_back(std::move(o));
        }
        // `run` registers the global options again (CLI11 stops at its command); listed once.
        std::erase_if(m.options, [&root](const OptionModel& o) {
            for (const auto& r : root.options)
                if (r.names == o.names) return true;
            return false;
        });
        commands.push_back(std::move(m));
    }
    std::string s = cmd.shell == "bash"  ? bash_script(root, commands)
                    : cmd.shell == "zsh" ? zsh_script(root, commands)
                                         : fish_script(root, commands);
    std::fwrite(s.data(), 1, s.size(), stdout);
}

}  // namespace

void register_completion(CLI::App& app, GlobalOptions& global) {
    (void)global;
    auto cmd = std::make_shared<CompletionCommand>();
    CLI::App* c =
        app.add_subcommand("completion", "Print the shell completion script for bash, zsh or fish");
    c->add_option("SHELL", cmd->shell, "bash (source <(envbox completion bash)), zsh or fish")
        ->required()
        ->check(CLI::IsMember({"bash", "zsh", "fish"}));
    c->callback([&app, cmd] { run_completion(app, *cmd); });
}

}  // namespace envbox::cli
