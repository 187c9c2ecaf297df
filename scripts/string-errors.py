#!/usr/bin/env python3
"""Lists every `Result<_, String>` in the library crates' non-test code (issue [M14], "Errors
are strings"), then prints the count on stderr. Type expressions spanning lines are matched
whole (balanced angle brackets); comments, string and char literals, `tests/`, `benches/`,
`examples/`, `src/bin/` and `#[cfg(test)]` items are skipped.

    python3 scripts/string-errors.py [CRATE,CRATE,...] [ROOT]
"""
import os, re, sys
LIBRARY = "model,oracle,generators,scenario,fuzz,live,soak,cases,chart,tier,reports,conformance"
crates = (sys.argv[1] if len(sys.argv) > 1 else LIBRARY).split(',')
root = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
hits = []
def strip_comments(src):
    out=[]; i=0; n=len(src); 
    while i<n:
        if src.startswith('//',i):
            j=src.find('\n',i); j=n if j<0 else j
            out.append(' '*(j-i)); i=j
        elif src.startswith('/*',i):
            j=src.find('*/',i+2); j=n if j<0 else j+2
            out.append(''.join(c if c=='\n' else ' ' for c in src[i:j])); i=j
        elif src[i]=="'" and i+2<n and (src[i+2]=="'" or src[i+1]=='\\'):
            j=src.find("'", i+2 if src[i+1]!='\\' else i+3)
            out.append(' '*(j-i+1)); i=j+1
        elif src.startswith('r#"',i) or src.startswith('r##"',i):
            h=src[i+1:src.find('"',i)]; end='"'+h
            j=src.find(end,i+len(h)+2); j=n if j<0 else j+len(end)
            out.append(''.join(c if c=='\n' else ' ' for c in src[i:j])); i=j
        elif src[i]=='"':
            j=i+1
            while j<n and src[j]!='"':
                j+= 2 if src[j]=='\\' else 1
            out.append(src[i:j+1]); i=j+1
        else:
            out.append(src[i]); i+=1
    return ''.join(out)
def blank_cfg_test(src):
    # blank out items following #[cfg(test)]
    res=list(src)
    for m in re.finditer(r'#\[cfg\(test\)\]', src):
        k=src.find('{', m.end())
        semi=src.find(';', m.end())
        if semi!=-1 and semi<k: 
            for p in range(m.start(),semi+1): 
                if res[p]!='\n': res[p]=' '
            continue
        d=0; p=k
        while p<len(src):
            if src[p]=='{': d+=1
            elif src[p]=='}':
                d-=1
                if d==0: break
            p+=1
        for q in range(m.start(),min(p+1,len(src))):
            if res[q]!='\n': res[q]=' '
    return ''.join(res)
for c in crates:
    for dp,dn,fn in os.walk(os.path.join(root,c)):
        parts=dp.split(os.sep)
        if any(x in ('tests','benches','target','examples') for x in parts): continue
        if 'bin' in parts: continue
        for f in fn:
            if not f.endswith('.rs'): continue
            p=os.path.join(dp,f); s=open(p).read()
            s=blank_cfg_test(strip_comments(s))
            # find Result< ... , String> with balanced angle brackets
            for m in re.finditer(r'\bResult<', s):
                i=m.end(); d=1
                while i<len(s) and d>0:
                    if s[i]=='<': d+=1
                    elif s[i]=='>' and s[i-1]!='-' and s[i-1]!='=': d-=1
                    i+=1
                inner=s[m.end():i-1]
                # top-level last arg
                dd=0; last=0
                for k,ch in enumerate(inner):
                    if ch in '<([': dd+=1
                    elif ch in '>)]' and not (ch=='>' and k>0 and inner[k-1] in '-='): dd-=1
                    elif ch==',' and dd==0: last=k+1
                if last and re.fullmatch(r'\s*(std::string::)?String\s*,?\s*', inner[last:]):
                    line=s.count('\n',0,m.start())+1
                    hits.append(f"{os.path.relpath(p,root)}:{line}: Result<{' '.join(inner.split())}>")
for h in hits: print(h)
print(len(hits), file=sys.stderr)
