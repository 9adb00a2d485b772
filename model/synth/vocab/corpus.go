package vocab

// corpus is the text the synthetic merges are learned from: plain English
// prose, chat-like turns and some Go and shell code, written for this
// package. Its only job is to give the byte-level BPE the common English
// and code fragments (" the", "ing", "func", "    ") a real tokenizer has,
// so that tokenized prompts are a realistic few tokens per word. Changing
// it changes every synthetic vocabulary, and so every file written with
// one: treat it as frozen.
const corpus = `The quick brown fox jumps over the lazy dog. A journey of a thousand miles begins with a single step.
When the morning light came through the window, the old man opened his eyes and listened to the birds singing in the garden.
He had lived in this house for more than forty years, and every room held a memory of his family, his friends and his work.
In the kitchen there was a table made of oak, with a bowl of apples and a small radio that played music all day long.
She asked him whether he wanted some coffee or tea, and he answered that he would prefer a glass of cold water instead.
The weather was changing quickly: clouds were gathering over the hills, and the wind was getting stronger every minute.
Children were playing in the street, running between the houses, laughing and shouting at each other as children do.
Language models predict the next token of a text from the tokens that came before it, one position at a time.
A tokenizer splits the text into pieces, and each piece is looked up in a vocabulary to find its number.
The model turns those numbers into vectors, mixes them through many layers of attention and feed-forward networks,
and finally produces a score for every token of the vocabulary; the highest score is the most likely continuation.
Training such a model takes a great deal of data and computation, but running it only needs the weights and a little memory.
Quantization stores the weights with fewer bits, trading a small loss of accuracy for a much smaller and faster model.
Please summarize the following article in three sentences. Explain why the sky is blue. Write a short poem about the sea.
What is the capital of France? The capital of France is Paris, which is also its largest city.
How many days are there in a leap year? There are three hundred and sixty-six days in a leap year.
Can you help me write an email to my manager asking for a day off next Friday? Of course, here is a draft you can adapt.
Thank you very much for your help. You're welcome! Let me know if there is anything else I can do for you.
I think that we should meet again next week to discuss the results of the experiment and decide what to do next.
They were not sure whether the bridge would hold, so they decided to wait until the engineers had finished their inspection.
Numbers such as 1, 2, 3, 10, 42, 100, 256, 1024, 2048, 65536 and 3.14159 appear in text and in code alike.
On Monday, Tuesday and Wednesday the office opens at 9:00; on Thursday and Friday it opens at 8:30 in the morning.
January, February, March, April, May, June, July, August, September, October, November and December.
user: Hello! Who are you?
assistant: Hello! I am a helpful assistant. How can I help you today?
user: Tell me a joke about computers.
assistant: Why did the computer go to the doctor? Because it had a virus!
system: You are a helpful, respectful and honest assistant. Always answer as helpfully as possible.

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Config holds the settings of the program.
type Config struct {
	Name    string
	Path    string
	Threads int
	Verbose bool
}

// ErrNotFound is returned when a file does not exist.
var ErrNotFound = errors.New("not found")

func readConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var c Config
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "name":
			c.Name = strings.TrimSpace(value)
		case "path":
			c.Path = strings.TrimSpace(value)
		}
	}
	return &c, nil
}

func main() {
	cfg, err := readConfig("config.txt")
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	for i := 0; i < cfg.Threads; i++ {
		fmt.Printf("thread %d of %s\n", i, cfg.Name)
	}
}

def fibonacci(n):
    """Return the n-th Fibonacci number."""
    if n < 2:
        return n
    a, b = 0, 1
    for _ in range(n - 1):
        a, b = b, a + b
    return b

class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()

if __name__ == "__main__":
    print(fibonacci(10))

#!/bin/sh
set -eu
for file in *.txt; do
    echo "processing $file"
    grep -c "error" "$file" || true
done

function add(a, b) { return a + b; }
const result = items.filter((x) => x.value > 0).map((x) => x.name);
console.log(JSON.stringify({ "name": "example", "values": [1, 2, 3] }, null, 2));
SELECT name, count(*) FROM users WHERE age > 18 GROUP BY name ORDER BY name;
<html><head><title>Example</title></head><body><p>Hello, world!</p></body></html>
`
