//! [`Names`]: a module's export names as one sorted set in one buffer.
//!
//! A profile's modules export tens of thousands of names, and the check's cache
//! reads all of them back at every run. Held as a `BTreeSet<String>`, each name
//! was an allocation and a tree node to build and free again; here a set is two
//! allocations (the names' text and where each ends), asked by binary search. The
//! cache writes a set as a sorted JSON list and reads it back in one pass.

use std::fmt;

/// A sorted set of distinct names, held together.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// The names one after another, in order.
    text: String,
    /// Where each name ends in `text`; name `i` starts where `i - 1` ended.
    ends: Vec<u32>,
}

impl Names {
    /// Whether `name` is in the set.
    pub fn contains(&self, name: &str) -> bool {
        self.binary_search(name).is_ok()
    }

    /// The names, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.ends.len()).map(|i| self.get(i))
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The set with `more`'s names added.
    #[must_use]
    pub fn union<'a>(&'a self, more: impl IntoIterator<Item = &'a str>) -> Self {
        self.iter().chain(more).collect()
    }

    fn get(&self, i: usize) -> &str {
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
        &self.text[start..self.ends[i] as usize]
    }

    fn binary_search(&self, name: &str) -> Result<usize, usize> {
        let (mut low, mut high) = (0, self.ends.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.get(mid).cmp(name) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(low)
    }

    /// Appends `name`, which the caller knows sorts after every name held.
    fn push_last(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends
            .push(u32::try_from(self.text.len()).expect("names beyond 4 GiB"));
    }

    /// The last name held.
    fn last(&self) -> Option<&str> {
        self.ends.len().checked_sub(1).map(|i| self.get(i))
    }
}

impl<'a> FromIterator<&'a str> for Names {
    fn from_iter<I: IntoIterator<Item = &'a str>>(names: I) -> Self {
        let mut sorted: Vec<&str> = names.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut set = Self {
            text: String::with_capacity(sorted.iter().map(|n| n.len()).sum()),
            ends: Vec::with_capacity(sorted.len()),
        };
        for name in sorted {
            set.push_last(name);
        }
        set
    }
}

impl fmt::Debug for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl serde::Serialize for Names {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Names {
    /// A list of names. Read in order into the one buffer; a list that is not
    /// strictly ascending (not written by [`Names`]) is sorted afterwards.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct List;
        impl<'de> serde::de::Visitor<'de> for List {
            type Value = Names;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of names")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Names, A::Error> {
                // Read into this thread's scratch set, then copy out at the exact
                // size: two allocations per set, none regrown.
                SCRATCH.with_borrow_mut(|scratch| {
                    scratch.text.clear();
                    scratch.ends.clear();
                    let mut ascending = true;
                    while let Some(name) = seq.next_element_seed(NameInto(&mut scratch.text))? {
                        ascending &= scratch
                            .last()
                            .is_none_or(|last| last < name.as_str(&scratch.text));
                        scratch.ends.push(name.end);
                    }
                    Ok(if ascending {
                        Names {
                            text: scratch.text.as_str().to_owned(),
                            ends: scratch.ends.clone(),
                        }
                    } else {
                        scratch.iter().collect()
                    })
                })
            }
        }
        deserializer.deserialize_seq(List)
    }
}

thread_local! {
    /// The set being read, kept between reads for its capacity.
    static SCRATCH: std::cell::RefCell<Names> = std::cell::RefCell::default();
}

/// Where one name just read lies in the buffer it was appended to.
struct Appended {
    start: usize,
    end: u32,
}

impl Appended {
    fn as_str<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.end as usize]
    }
}

/// Reads one name by appending it to a buffer, with no allocation of its own.
struct NameInto<'a>(&'a mut String);

impl<'de> serde::de::DeserializeSeed<'de> for NameInto<'_> {
    type Value = Appended;
    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Appended, D::Error> {
        struct Append<'a>(&'a mut String);
        impl serde::de::Visitor<'_> for Append<'_> {
            type Value = Appended;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a name")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Appended, E> {
                let start = self.0.len();
                self.0.push_str(name);
                let end = u32::try_from(self.0.len()).map_err(|_| E::custom("names beyond 4 GiB"))?;
                Ok(Appended { start, end })
            }
        }
        deserializer.deserialize_str(Append(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_sorted_distinct_and_answers_membership() {
        let set: Names = ["b", "default", "a", "b", ""].into_iter().collect();
        assert_eq!(set.iter().collect::<Vec<_>>(), ["", "a", "b", "default"]);
        assert!(set.contains("a") && set.contains("default") && set.contains(""));
        assert!(!set.contains("c") && !set.contains("defaul"));
        assert_eq!(
            set.union(["c", "a"]).iter().collect::<Vec<_>>(),
            ["", "a", "b", "c", "default"]
        );
        assert!(Names::default().is_empty() && !Names::default().contains(""));
    }

    #[test]
    fn json_round_trips_and_an_unsorted_list_is_sorted() {
        let set: Names = ["x", "é\"q", "a"].into_iter().collect();
        let json = serde_json::to_string(&set).unwrap();
        assert_eq!(json, r#"["a","x","é\"q"]"#);
        assert_eq!(serde_json::from_str::<Names>(&json).unwrap(), set);
        let unsorted: Names = serde_json::from_str(r#"["x","a","x","\u0041"]"#).unwrap();
        assert_eq!(unsorted.iter().collect::<Vec<_>>(), ["A", "a", "x"]);
        assert!(serde_json::from_str::<Names>(r#"["a",1]"#).is_err());
    }
}
