"""Where does copying fail? Accuracy on echo/copy spans by target token class (space / after space / other)."""
import sys, torch
from collections import defaultdict
from transformers import AutoModelForCausalLM, AutoTokenizer
from toolgym.agent.render import Renderer
from toolgym.model.pretrain.corpus import generate_episode, skill_echo, episode_rng
from toolgym.model.pretrain.render import tokenize_episode
torch.set_num_threads(1)
d = sys.argv[1]
m = AutoModelForCausalLM.from_pretrained(d).eval(); t = AutoTokenizer.from_pretrained(d)
r = Renderer(t, prompt_style='compact')
space = t.convert_tokens_to_ids('Ġ')
stats = defaultdict(lambda: [0, 0])
for i in range(40):
    e = skill_echo(episode_rng(555, i)) if i % 2 else generate_episode(556, i)
    te = tokenize_episode(e, r)
    ids = torch.tensor([te.input_ids])
    with torch.no_grad(): pred = m(ids).logits[0].argmax(-1)
    turns = [i for i, mk in enumerate(te.loss_mask) if mk]
    for s in te.spans:
        if not (s.skill.startswith('copy') or s.skill == 'echo'): continue
        for p in range(s.start + 1, s.end):
            cls = 'target=space' if ids[0, p] == space else ('after space' if ids[0, p - 1] == space else 'other')
            stats[cls][0] += int(pred[p - 1] == ids[0, p]); stats[cls][1] += 1
    if i % 2:  # whole echo answer
        for p in turns[1:]:
            cls = 'echo:' + ('target=space' if ids[0, p] == space else ('after space' if ids[0, p - 1] == space else 'other'))
            stats[cls][0] += int(pred[p - 1] == ids[0, p]); stats[cls][1] += 1
for k, (a, n) in sorted(stats.items()):
    print(f"{k:24s} {a}/{n} = {a/max(n,1):.2f}")
