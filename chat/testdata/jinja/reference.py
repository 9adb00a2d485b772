"""Writes a reference for regen.sh: for each case of an .in file (argv[1]),
llama.cpp's rendering read from the llref-jinja output regen.sh left in
argv[2] (N.json, or N.err when the template did not parse), and Jinja2's
rendering of the same template and conversation."""
import json
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox


def unescape(s):
    """Decodes llref's input escapes: \\\\ \\n \\r \\t \\xHH."""
    out, i = bytearray(), 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        e = s[i + 1]
        if e == "x":
            out.append(int(s[i + 2 : i + 4], 16))
            i += 4
            continue
        out += {"\\": b"\\", "n": b"\n", "r": b"\r", "t": b"\t"}[e]
        i += 2
    return out.decode()


def jinja2_render(tmpl):
    # Hugging Face's chat template environment (transformers'
    # _compile_jinja_template) without its extra globals.
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    try:
        out = env.from_string(tmpl).render(
            messages=[{"role": "user", "content": "Hi"}],
            bos_token="<|endoftext|>",
            eos_token="<|endoftext|>",
            add_generation_prompt=True,
        )
        return {"rendered": out}
    except Exception as e:  # the template's own failure is the reference
        return {"error": f"{type(e).__name__}: {e}"}


def llama_render(tmp, n):
    try:
        with open(f"{tmp}/{n}.json") as f:
            r = json.load(f)["results"][0]
    except FileNotFoundError:
        with open(f"{tmp}/{n}.err") as f:
            # The lines that say what failed, without the backtrace the
            # library prints when an exception escapes it.
            keep = [
                l.strip()
                for l in f
                if "what():" in l or "error" in l.lower() or l.startswith("llref-jinja:")
            ]
            return {"error": " | ".join(keep)}
    if "error" in r:
        return {"error": r["error"]}
    return {"rendered": bytes.fromhex(r["rendered_hex"]).decode()}


cases, n = [], 0
with open(sys.argv[1]) as f:
    for line in f:
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        n += 1
        name, tmpl = line.split("\t", 1)
        tmpl = unescape(tmpl)
        cases.append(
            {
                "name": name,
                "template": tmpl,
                "llama_cpp": llama_render(sys.argv[2], n),
                "jinja2": jinja2_render(tmpl),
            }
        )
version = ""
for i in range(1, n + 1):
    try:
        with open(f"{sys.argv[2]}/{i}.json") as f:
            version = json.load(f)["llama_cpp"]
        break
    except FileNotFoundError:
        pass
doc = {
    "written_by": "chat/testdata/jinja/regen.sh",
    "llama_cpp": version,
    "jinja2": jinja2.__version__,
    "cases": cases,
}
json.dump(doc, sys.stdout, indent=1, ensure_ascii=False)
sys.stdout.write("\n")
