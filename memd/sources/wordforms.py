"""English word forms a stemmer cannot join: irregular verbs and plurals.

Porter folds ``decided`` into ``decide`` but leaves ``went`` apart from ``go`` and
``bought`` apart from ``buy``, and questions ask in the present ("where did we go?") what
notes record in the past ("we went to Lisbon"). A query word in one of these groups
matches any form of it. Forms that are mostly another word (``rose``, ``left``,
``found``, ``saw``, ``bit``) are left out, and so are ``be``, ``have`` and ``do``,
which questions use as helpers.
"""

from __future__ import annotations

# base, past, past participle (a form written once where they are the same), and
# forms porter stems apart from the base
_GROUPS = """
arise arose arisen; awake awoke awoken; beat beaten; become became; begin began begun;
bend bent; bleed bled; blow blew blown; break broke broken; breed bred;
bring brought; build built; burn burnt; buy bought; catch caught; choose chose chosen;
come came; creep crept; deal dealt; dig dug; draw drew drawn;
dream dreamt; drink drank drunk; drive drove driven; eat ate eaten; fall fell fallen;
feed fed; feel felt; fight fought; flee fled; fly flew flown; forbid forbade forbidden;
forget forgot forgotten; forgive forgave forgiven; freeze froze frozen; get got gotten;
give gave given; go goes went gone; grow grew grown; hang hung; hear heard;
hide hid hidden; hold held; keep kept; kneel knelt; know knew known; lead led;
lend lent; lose lost; make made; mean meant; meet met; overcome overcame;
pay paid; prove proven; see seen; ride rode ridden; ring rang rung; run ran; say said;
seek sought; sell sold; send sent; shake shook shaken; shine shone; shoot shot;
shrink shrank shrunk; sing sang sung; sink sank sunk; sit sat;
sleep slept; slide slid; speak spoke spoken; speed sped; spend spent; spin spun;
stand stood; steal stole stolen; stick stuck; sting stung; stink stank stunk;
strike struck; strive strove striven; swear swore sworn; sweep swept; swim swam swum;
swing swung; take took taken; teach taught; tear tore torn; tell told; think thought;
throw threw thrown; understand understood; undertake undertook undertaken;
wake woke woken; wear wore worn; weave wove woven; weep wept; win won; write wrote written;
child children; person people; man men; woman women; mouse mice; tooth teeth; foot feet;
goose geese
"""

FORMS: dict[str, tuple[str, ...]] = {
    word: tuple(group.split())
    for group in _GROUPS.replace("\n", " ").split(";")
    for word in group.split()
}


def forms(word: str) -> tuple[str, ...]:
    """Every form of ``word``'s group (itself first), or just ``word``."""
    group = FORMS.get(word)
    if group is None:
        return (word,)
    return (word, *(w for w in group if w != word))
