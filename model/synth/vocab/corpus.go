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
The history of computing is a story of people who wanted machines to do their arithmetic for them.
Early calculators were mechanical: gears, levers and wheels that carried digits from one column to the next.
Later, engineers built electronic computers with vacuum tubes, then transistors, and finally integrated circuits
that placed millions and then billions of switches on a single piece of silicon smaller than a fingernail.
Programming languages grew alongside the hardware. Assembly gave names to instructions; compilers translated
higher-level languages into machine code; interpreters executed scripts line by line; and garbage collectors
freed programmers from managing memory by hand. Every generation made it easier to express an idea precisely.
Networks connected the machines. Messages travel as packets through routers and switches, and protocols such as
TCP, IP, HTTP and TLS describe how the packets are addressed, ordered, encrypted and delivered.
Security matters because every input from the outside world may be hostile: a file, a request or a message can
be crafted to crash a program, to read memory it should not, or to run code the author never intended.
Careful software validates lengths, checks bounds, limits the resources a request may consume and reports
errors clearly, so that a failure is caught early and explained rather than hidden and repeated.
Testing is how engineers gain confidence. Unit tests exercise small functions; integration tests check that
components work together; fuzzing feeds random inputs to find the cases nobody thought of; and benchmarks
measure how fast the code runs, so that a change which makes it slower is noticed before it is released.
Documentation explains why the code is the way it is. A good comment describes the reason for a decision,
the invariant a function keeps, or the surprising case it handles, instead of repeating what the code says.
In the village market, farmers sold vegetables, bread, cheese, honey and flowers from wooden stalls.
The baker woke up before dawn to prepare the dough, and by seven o'clock the smell of fresh loaves filled the square.
Tourists took photographs of the church, the fountain and the narrow streets paved with old grey stones.
A teacher walked her students to the museum, where they learned about dinosaurs, volcanoes, planets and stars.
The river flowed slowly through the valley, past fields of wheat, orchards of cherries and small white houses.
Autumn arrived with cooler nights, golden leaves and the first rain that had fallen in several weeks.
Scientists measure temperature, pressure, humidity and wind speed to forecast the weather for the coming days.
Doctors recommend regular exercise, a balanced diet, enough sleep and plenty of water for a healthy life.
The library was quiet except for the sound of pages turning and the occasional whisper between two readers.
Music can be happy or sad, fast or slow, loud or soft; it can tell a story without using a single word.
Mathematics studies numbers, shapes, patterns and structures, and proves statements with logical arguments.
For example, the sum of the angles of a triangle is one hundred and eighty degrees, and the square root of two
is irrational, which means it cannot be written as a fraction of two whole numbers.
Physics describes motion, energy, forces, light and matter; chemistry describes how atoms combine into molecules;
biology describes living organisms, from single cells to whole ecosystems of plants, animals and fungi.
Economics studies how people, companies and governments decide what to produce, what to buy and what to save.
Philosophy asks questions about knowledge, truth, justice, beauty and the meaning of a good life.
Could you translate this sentence into German, French and Spanish? Sure: here are the three translations.
Please list five fruits that are red. Strawberries, cherries, raspberries, red apples and pomegranates.
Write a function that returns the largest element of a list, and explain its complexity in big-O notation.
Summarize the main points of the meeting: the budget was approved, the deadline moved to March, and two new
engineers will join the team next month.

// Package cache implements a small least-recently-used cache.
package cache

import "container/list"

// Cache holds at most Capacity entries and evicts the least recently used one.
type Cache[K comparable, V any] struct {
	capacity int
	order    *list.List
	items    map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key   K
	value V
}

// New returns an empty cache with the given capacity.
func New[K comparable, V any](capacity int) *Cache[K, V] {
	return &Cache[K, V]{capacity: capacity, order: list.New(), items: make(map[K]*list.Element)}
}

// Get returns the value stored for key and whether it was present.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*entry[K, V]).value, true
	}
	var zero V
	return zero, false
}

// Put stores value for key, evicting the oldest entry when the cache is full.
func (c *Cache[K, V]) Put(key K, value V) {
	if e, ok := c.items[key]; ok {
		e.Value.(*entry[K, V]).value = value
		c.order.MoveToFront(e)
		return
	}
	if c.order.Len() >= c.capacity {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*entry[K, V]).key)
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key: key, value: value})
}

func TestCache(t *testing.T) {
	tests := []struct {
		name string
		ops  []string
		want []int
	}{
		{"empty", nil, nil},
		{"one", []string{"put a 1", "get a"}, []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.ops); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

import numpy as np
import json

def softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)

def load_config(path):
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)

for epoch in range(num_epochs):
    total_loss = 0.0
    for batch in loader:
        optimizer.zero_grad()
        loss = model(batch["input_ids"], labels=batch["labels"]).loss
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    print(f"epoch {epoch}: loss {total_loss / len(loader):.4f}")

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv) {
    int values[] = {5, 3, 9, 1, 7};
    size_t n = sizeof(values) / sizeof(values[0]);
    qsort(values, n, sizeof(int), compare);
    for (size_t i = 0; i < n; i++) {
        printf("%d\n", values[i]);
    }
    return 0;
}

fn main() {
    let numbers: Vec<i32> = (1..=10).collect();
    let sum: i32 = numbers.iter().filter(|&&x| x % 2 == 0).sum();
    println!("sum of even numbers: {}", sum);
    match std::env::args().nth(1) {
        Some(name) => println!("hello, {name}!"),
        None => eprintln!("usage: hello NAME"),
    }
}

{"model": "example", "messages": [{"role": "user", "content": "Hello"}], "stream": true, "max_tokens": 128, "temperature": 0.7}
curl -s http://localhost:8080/v1/chat/completions -H "Content-Type: application/json" -d @request.json | jq .
git commit -m "fix: check the length before reading the header"
docker run --rm -p 8080:8080 -v "$PWD/models:/models" example/server:latest --model /models/model.gguf
| Name | Type | Default | Description |
|------|------|---------|-------------|
| threads | int | 4 | number of worker threads |
| verbose | bool | false | print debug messages |
- [x] write the parser
- [ ] add fuzz tests
- [ ] update the documentation
`
